// `vkllm serve` driven by OpenAI's official client and by raw HTTP for what a client library would
// refuse to send. run_openai_tests.sh starts the server (stories260K, 4 sequences, 256-token context,
// API key "test-key") and sets VKLLM_SERVER_URL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const baseURL = process.env.VKLLM_SERVER_URL;
const apiKey = process.env.VKLLM_API_KEY;
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const model = 'stories260K';
const greedy = { model, temperature: 0, max_tokens: 24 };

async function post(path, body, headers = {}) {
  const response = await fetch(`${baseURL}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

function assertOpenAIError(reply, status) {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(typeof reply.body.error.message, 'string');
  assert.ok(reply.body.error.message.length > 0);
  assert.equal(typeof reply.body.error.type, 'string');
  assert.ok('code' in reply.body.error);
}

async function metric(name) {
  const text = await (await fetch(`${baseURL.replace(/\/v1$/, '')}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`vkllm_${name} `));
  assert.ok(line, `metric vkllm_${name} missing`);
  return Number(line.split(' ')[1]);
}

async function streamedChat(params) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let roleSeen = false;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta.role === 'assistant') roleSeen = true;
      text += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage, roleSeen };
}

test('GET /v1/models lists the served model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), [model]);
});

test('GET /health answers without a key', async () => {
  const response = await fetch(`${baseURL.replace(/\/v1$/, '')}/health`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { status: 'ok' });
});

test('chat completion, whole and streamed, give the same greedy text and usage', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const whole = await client.chat.completions.create({ ...greedy, messages });
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices.length, 1);
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(whole.choices[0].message.content.length > 0);
  assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 0);
  assert.ok(whole.usage.completion_tokens > 0 && whole.usage.completion_tokens <= 24);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + whole.usage.completion_tokens);

  const streamed = await streamedChat({ ...greedy, messages });
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  assert.ok(streamed.roleSeen);
  assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
});

test('text completion, whole and streamed; max_tokens ends with finish_reason length', async () => {
  const whole = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 8 });
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.equal(whole.usage.completion_tokens, 8);
  const stream = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 8, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);
});

test('stop strings end the text before them', async () => {
  const free = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 40 });
  const text = free.choices[0].text;
  const cut = text.indexOf(' ', 6);
  assert.ok(cut > 0, `no second word in ${JSON.stringify(text)}`);
  const stop = text.slice(cut, cut + 3);
  const stopped = await client.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 40, stop: [stop] });
  assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(stopped.choices[0].finish_reason, 'stop');
});

test('a multi-turn chat reports the earlier turn as cached prompt tokens', async () => {
  const messages = [{ role: 'system', content: 'You tell short stories.' }, { role: 'user', content: 'A story about a dog.' }];
  const first = await client.chat.completions.create({ ...greedy, messages });
  messages.push({ role: 'assistant', content: first.choices[0].message.content }, { role: 'user', content: 'And then?' });
  const second = await client.chat.completions.create({ ...greedy, messages });
  assert.ok(second.usage.prompt_tokens > first.usage.prompt_tokens);
  assert.ok(second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 1,
    `cached ${second.usage.prompt_tokens_details.cached_tokens} of the first turn's ${first.usage.prompt_tokens}`);
});

test('concurrent greedy requests each give what they give alone', async () => {
  const prompts = ['Once upon a time', 'The little dog', 'Lily went to the park and', 'Tom had a red ball',
    'The sun', 'Sue and her mom', 'One day a bird', 'Max was sad because'];
  const alone = [];
  for (const prompt of prompts) alone.push((await client.completions.create({ ...greedy, prompt })).choices[0].text);
  const together = await Promise.all(prompts.map((prompt) => client.completions.create({ ...greedy, prompt })));
  assert.deepEqual(together.map((r) => r.choices[0].text), alone);
});

test('bad requests get OpenAI-shaped 4xx errors while a concurrent stream completes', async () => {
  const concurrent = streamedChat({ model, temperature: 0, max_tokens: 64, messages: [{ role: 'user', content: 'A long story.' }] });
  const chat = (body) => post('/chat/completions', body);
  const messages = [{ role: 'user', content: 'Hi' }];
  assertOpenAIError(await post('/chat/completions', '{"messages": [', {}), 400);
  assertOpenAIError(await post('/chat/completions', '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1E5043}'), 400);
  assertOpenAIError(await chat({ model, messages: 'hello' }), 400);
  assertOpenAIError(await chat({ model }), 400);
  assertOpenAIError(await chat({ model, messages, temperature: 'hot' }), 400);
  assertOpenAIError(await chat({ model, messages, temperature: -1 }), 400);
  assertOpenAIError(await chat({ model, messages, top_p: 5 }), 400);
  assertOpenAIError(await chat({ model, messages, max_tokens: 0 }), 400);
  assertOpenAIError(await chat({ model, messages, n: 2 }), 400);
  assertOpenAIError(await chat({ model, messages, stop: [1, 2] }), 400);
  assertOpenAIError(await chat({ model, messages: [{ role: 'wizard', content: 'x' }] }), 400);
  assertOpenAIError(await chat({ model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://example.com/cat.png' } }] }] }), 400);
  const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
  const noEncoder = await chat({ model, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: png } }] }] });
  assertOpenAIError(noEncoder, 400);
  assert.equal(noEncoder.body.error.code, 'unsupported_content');
  assertOpenAIError(await chat({ model, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] }), 400);
  const notFound = await chat({ model: 'gpt-4o', messages });
  assertOpenAIError(notFound, 404);
  assert.equal(notFound.body.error.code, 'model_not_found');
  const tooLong = await chat({ model, messages, max_tokens: 100000 });
  assertOpenAIError(tooLong, 400);
  assert.equal(tooLong.body.error.code, 'context_length_exceeded');
  assertOpenAIError(await post('/completions', { model, prompt: 'Once '.repeat(400) }), 400);
  assertOpenAIError(await post('/chat/completions', { model, messages }, { Authorization: 'Bearer wrong' }), 401);
  assertOpenAIError(await post('/chat/completions', { model, messages }, { Authorization: '' }), 401);
  const huge = JSON.stringify({ model, messages: [{ role: 'user', content: 'x'.repeat(40 << 20) }] });
  const oversized = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` }, body: huge });
  assert.equal(oversized.status, 413);
  assert.equal(typeof (await oversized.json()).error.message, 'string');
  // `curl -d` without a JSON content type: the body is read as JSON all the same, as llama-server does.
  const formEncoded = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, max_tokens: 2, messages: [{ role: 'user', content: 'x'.repeat(100) }] }) });
  assert.equal(formEncoded.status, 200);
  assert.equal((await formEncoded.json()).usage.completion_tokens, 2);
  const unknownRoute = await post('/nowhere', {});
  assertOpenAIError(unknownRoute, 404);

  const done = await concurrent;
  assert.ok(done.text.length > 0);
  assert.ok(['stop', 'length'].includes(done.finish));
  assert.ok(await metric('requests_rejected_total') >= 20);
});

test('a client that disconnects mid-stream frees its sequence', async () => {
  const controller = new AbortController();
  const stream = await client.completions.create(
    { model, prompt: 'Once upon a time', max_tokens: 200, temperature: 0.8, seed: 1, stream: true },
    { signal: controller.signal });
  let chunks = 0;
  try {
    for await (const chunk of stream) {
      if (chunk.choices[0]?.text && ++chunks === 2) controller.abort();
    }
  } catch (error) {
    assert.ok(error.name === 'AbortError' || error.name === 'APIUserAbortError', error.name);
  }
  for (let i = 0; i < 100 && (await metric('requests_processing')) > 0; ++i) await new Promise((r) => setTimeout(r, 100));
  assert.equal(await metric('requests_processing'), 0);
  const after = await client.completions.create({ ...greedy, prompt: 'The end', max_tokens: 4 });
  assert.equal(after.usage.completion_tokens, 4);
});

test('GET /metrics counts requests and tokens in Prometheus text', async () => {
  assert.ok(await metric('requests_total') > 10);
  assert.ok(await metric('generated_tokens_total') > 100);
  assert.ok(await metric('prompt_tokens_cached_total') > 0);
  assert.equal(await metric('kv_cells_total'), 4 * 256);
  assert.ok(await metric('generated_tokens_per_second') > 0);
  assert.equal(await metric('requests_queued'), 0);
});
