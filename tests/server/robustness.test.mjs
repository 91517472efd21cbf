// What no client may do to `vkllm serve`: hostile bodies, raw invalid bytes, slow and idle connections,
// pipelining, keep-alive reuse, and the smaller HTTP conventions (CORS, /v1/models/{id}, the fields it
// honours or refuses by name). run_openai_tests.sh starts the server (stories260K, 4 sequences,
// 256-token context, API key "test-key") and sets VKLLM_SERVER_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { connect, endpoint, request, ResponseReader, sseEvents, strictText } from './http_client.mjs';

const baseURL = process.env.VKLLM_SERVER_URL;
const apiKey = process.env.VKLLM_API_KEY;
const root = baseURL.replace(/\/v1$/, '');
const server = endpoint(baseURL);
const auth = { Authorization: `Bearer ${apiKey}` };
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const model = 'stories260K';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function exchange(bytes, timeoutMs) {
  const socket = await connect(server);
  const reader = new ResponseReader(socket);
  socket.write(bytes);
  try {
    return await reader.next(timeoutMs);
  } finally {
    socket.destroy();
  }
}

test('a body nested 100,000 deep is a 400 and the server answers the next request', async () => {
  const deep = `{"model": "${model}", "prompt": ${'['.repeat(100000)}${']'.repeat(100000)}, "max_tokens": 1}`;
  for (const path of ['/v1/completions', '/v1/chat/completions']) {
    const reply = await fetch(`${baseURL}${path.slice(3)}`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: deep });
    assert.equal(reply.status, 400);
    const error = (await reply.json()).error;
    assert.equal(error.code, 'invalid_json');
    assert.match(error.message, /deeper than 64/);
  }
  const after = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 2, temperature: 0 });
  assert.equal(after.usage.completion_tokens, 2);
});

test('a keep-alive connection stays open across many requests with large bodies', async () => {
  // Reading a large body can leave the socket's readiness behind: a wait for the next request that
  // took it for the client's FIN closed about 3% of these connections under the next request.
  const deep = `{"model": "${model}", "prompt": ${'['.repeat(100000)}${']'.repeat(100000)}, "max_tokens": 1}`;
  const socket = await connect(server);
  const reader = new ResponseReader(socket);
  try {
    for (let i = 0; i < 300; ++i) {
      socket.write(request('POST', '/v1/completions', { body: deep, headers: auth }));
      const reply = await reader.next();
      assert.equal(reply.status, 400, `request ${i}`);
      assert.equal(reply.headers.connection, undefined, `request ${i}`);
    }
  } finally {
    socket.destroy();
  }
});

test('raw invalid UTF-8 in a body is a 400 whose body is valid UTF-8 JSON', async () => {
  const body = Buffer.concat([Buffer.from('{"model": "stories260K", "prompt": "abc'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('", "max_tokens": 1}')]);
  const reply = await exchange(request('POST', '/v1/completions', { body, headers: auth }));
  assert.equal(reply.status, 400);
  const error = JSON.parse(strictText(reply.body)).error;
  assert.equal(error.code, 'invalid_json');
});

test('an error message keeps what follows an embedded NUL', async () => {
  const reply = await fetch(`${baseURL}/completions`, {
    method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'left\u0000right', prompt: 'x', max_tokens: 1 }) });
  assert.equal(reply.status, 404);
  assert.ok((await reply.json()).error.message.includes('left\u0000right'));
});

test('pipelined requests on one connection are all answered, in order', async () => {
  const socket = await connect(server);
  const reader = new ResponseReader(socket);
  socket.write(Buffer.concat([
    request('GET', '/health'),
    request('POST', '/v1/completions', { body: { model, prompt: 'Once upon a time', max_tokens: 3, temperature: 0 }, headers: auth }),
    request('GET', '/v1/models', { headers: auth }),
    request('POST', '/v1/completions', { body: { model, prompt: 'The dog', max_tokens: 2, temperature: 0, stream: true }, headers: auth }),
    request('GET', '/v1/models/nothing', { headers: auth }),
  ]));
  const health = await reader.next();
  assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
  const completion = await reader.next();
  assert.equal(completion.status, 200);
  assert.equal(JSON.parse(completion.body).usage.completion_tokens, 3);
  const models = await reader.next();
  assert.equal(JSON.parse(models.body).data[0].id, model);
  const streamed = await reader.next();
  assert.equal(streamed.headers['transfer-encoding'], 'chunked');
  assert.equal(sseEvents(strictText(streamed.body)).at(-1), '[DONE]');
  const missing = await reader.next();
  assert.equal(missing.status, 404);
  socket.destroy();
});

test('requests reusing one keep-alive connection pay no delayed-ACK stall', async () => {
  const socket = await connect(server);
  const reader = new ResponseReader(socket);
  const body = { model, prompt: 'Once upon a time', max_tokens: 1, temperature: 0 };
  const times = [];
  for (let i = 0; i < 11; ++i) {
    const started = process.hrtime.bigint();
    socket.write(request('POST', '/v1/completions', { body, headers: auth }));
    const reply = await reader.next();
    assert.equal(reply.status, 200);
    if (i > 0) times.push(Number(process.hrtime.bigint() - started) / 1e6);  // the first warms the cache
  }
  socket.destroy();
  times.sort((a, b) => a - b);
  console.log(`keep-alive requests, max_tokens 1: median ${times[5].toFixed(2)} ms, max ${times.at(-1).toFixed(2)} ms`);
  // Headers and body in separate writes without TCP_NODELAY cost ~40 ms a request (delayed ACK).
  assert.ok(times[5] < 35, `median ${times[5]} ms`);
});

test('slow and idle connections do not delay other clients', async () => {
  const slow = [];
  for (let i = 0; i < 64; ++i) {
    const socket = await connect(server);
    socket.on('error', () => {});
    socket.write('POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n');
    slow.push(socket);
  }
  const idle = [];
  for (let i = 0; i < 200; ++i) {
    const socket = await connect(server);
    const reader = new ResponseReader(socket);
    socket.write(request('GET', '/health'));
    assert.equal((await reader.next()).status, 200);
    idle.push(socket);  // kept alive, sending nothing
  }
  const drip = setInterval(() => { for (const socket of slow) socket.write('X'); }, 1000);
  try {
    await sleep(1500);
    for (let round = 0; round < 2; ++round) {
      let started = Date.now();
      const health = await fetch(`${root}/health`);
      assert.equal(health.status, 200);
      const healthMs = Date.now() - started;
      started = Date.now();
      const completion = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
      const completionMs = Date.now() - started;
      assert.equal(completion.usage.completion_tokens, 4);
      console.log(`with 64 slow and 200 idle connections: /health ${healthMs} ms, a 4-token completion ${completionMs} ms`);
      assert.ok(healthMs < 1000 && completionMs < 1000, `${healthMs} ms, ${completionMs} ms`);
      await sleep(1000);
    }
  } finally {
    clearInterval(drip);
    for (const socket of [...slow, ...idle]) socket.destroy();
  }
});

test('header limits: too many fields or too many bytes is a 431', async () => {
  const many = {};
  for (let i = 0; i < 150; ++i) many[`X-Field-${i}`] = 'v';
  assert.equal((await exchange(request('GET', '/health', { headers: many }))).status, 431);
  assert.equal((await exchange(request('GET', '/health', { headers: { 'X-Big': 'x'.repeat(20000) } }))).status, 431);
  const reply = await exchange(Buffer.from('NOT HTTP AT ALL\r\n\r\n'));
  assert.equal(reply.status, 400);
  assert.equal(typeof JSON.parse(reply.body).error.message, 'string');
});

test('CORS: a preflight is answered and every response allows any origin', async () => {
  const preflight = await fetch(`${baseURL}/chat/completions`, {
    method: 'OPTIONS', headers: { Origin: 'http://localhost:3000', 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,content-type' } });
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get('access-control-allow-methods'), /POST/);
  assert.match(preflight.headers.get('access-control-allow-headers'), /authorization/);
  assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
  const models = await fetch(`${baseURL}/models`, { headers: auth });
  assert.equal(models.headers.get('access-control-allow-origin'), '*');
});

test('a completions server answers /v1/embeddings with 501, naming --embeddings', async () => {
  const reply = await fetch(`${baseURL}/embeddings`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, input: 'x' }) });
  assert.equal(reply.status, 501);
  assert.match((await reply.json()).error.message, /--embeddings/);
});

test('GET /v1/models/{id} retrieves the served model; another id is a 404', async () => {
  const retrieved = await client.models.retrieve(model);
  assert.equal(retrieved.id, model);
  assert.equal(retrieved.object, 'model');
  await assert.rejects(client.models.retrieve('gpt-4o'), (error) => error.status === 404);
  const wrongMethod = await fetch(`${baseURL}/models`, { method: 'POST', headers: auth });
  assert.equal(wrongMethod.status, 405);
  assert.match(wrongMethod.headers.get('allow'), /GET/);
});

test('echo is honoured; suffix and best_of > 1 are refused by name', async () => {
  const echoed = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 3, temperature: 0, echo: true });
  const plain = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 3, temperature: 0 });
  assert.equal(echoed.choices[0].text, 'Once upon a time' + plain.choices[0].text);
  const stream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 3, temperature: 0, echo: true, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, echoed.choices[0].text);
  for (const [field, value] of [['suffix', ' the end'], ['best_of', 2]]) {
    const reply = await fetch(`${baseURL}/completions`, {
      method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, prompt: 'x', max_tokens: 1, [field]: value }) });
    assert.equal(reply.status, 400);
    assert.equal((await reply.json()).error.param, field);
  }
});

test('a prompt far past the context is refused before it is tokenized', async () => {
  const started = Date.now();
  const reply = await fetch(`${baseURL}/completions`, {
    method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, prompt: 'Once upon a time there was a dog. '.repeat(600000), max_tokens: 1 }) });
  assert.equal(reply.status, 400);
  assert.equal((await reply.json()).error.code, 'context_length_exceeded');
  console.log(`a 20 MB prompt refused in ${Date.now() - started} ms`);
});

test('prompt and reply together never pass the context, with max_tokens or without', async () => {
  const prompt = 'Once upon a time';
  const probe = await client.completions.create({ model, prompt, max_tokens: 1, temperature: 0 });
  const room = 256 - probe.usage.prompt_tokens;
  const exact = await client.completions.create({ model, prompt, max_tokens: room, temperature: 0 });
  assert.ok(exact.usage.total_tokens <= 256);
  const over = await fetch(`${baseURL}/completions`, {
    method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: room + 1 }) });
  assert.equal(over.status, 400);
  assert.equal((await over.json()).error.code, 'context_length_exceeded');
  // Without max_tokens the reply runs until the context is full at the most.
  const open = await client.completions.create({ model, prompt, temperature: 1.5, seed: 7 });
  assert.ok(open.usage.total_tokens <= 256, `total ${open.usage.total_tokens}`);
  if (open.choices[0].finish_reason === 'length') assert.equal(open.usage.total_tokens, 256);
});
