// Bodies built to make parsing or grammar compilation crash or crawl (issue 38): JSON hidden in a
// tool call's arguments string 100,000 deep, very wide arrays, objects and message lists, and
// grammars and schemas that would expand past what the grammar engine follows. Each is answered
// with a 4xx naming what is wrong within 1 s of the request's end (10 s for the 100,000-property
// schema), the server stays up, and a normal 4-token completion right after takes under 1 s.
// The file starts a server of its own (stories260K, 4 sequences, 256-token context) so that it can
// watch the process; run_openai_tests.sh sets VKLLM_BIN and VKLLM_SOURCE_DIR.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { connect, request, ResponseReader } from './http_client.mjs';
import { deadline, serve, stop } from './serve.mjs';

const stories = path.join(process.env.VKLLM_SOURCE_DIR, 'models', 'stories260K.gguf');
let server;

before(async () => {
  server = await serve(['-m', stories, '--parallel', '4', '-c', '256']);
  // The first completion builds the device's pipelines: not what the timed ones measure.
  const warm = await timedPost('/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
  assert.equal(warm.reply.status, 200, warm.reply.body.toString());
});

after(async () => {
  await stop(server);
});

// One request on a connection of its own: the response, and the milliseconds from the moment the
// last byte of the request left (the socket's write callback) to the whole response.
async function timedPost(pathname, body, timeoutMs = 30000) {
  const socket = await connect(server.address);
  const reader = new ResponseReader(socket);
  try {
    const sent = await new Promise((resolve) => socket.write(request('POST', pathname, { body }), () => resolve(Date.now())));
    const reply = await reader.next(timeoutMs);
    return { reply, ms: Date.now() - sent };
  } finally {
    socket.destroy();
  }
}

// The hostile request is a 4xx within `withinMs` whose message matches `message`; the server is
// alive and answers a normal completion within 1 s right after.
async function refusedQuickly(pathname, body, message, withinMs = 1000) {
  const { reply, ms } = await timedPost(pathname, body);
  const text = reply.body.toString();
  assert.ok(reply.status >= 400 && reply.status < 500, `${reply.status}: ${text}`);
  assert.match(JSON.parse(text).error.message, message);
  console.log(`${pathname}: ${reply.status} in ${ms} ms`);
  assert.ok(ms < deadline(withinMs), `answered in ${ms} ms`);
  assert.equal(server.child.exitCode, null, 'the server exited');
  assert.equal(server.child.signalCode, null, 'the server was killed');
  const next = await timedPost('/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
  assert.equal(next.reply.status, 200, next.reply.body.toString());
  assert.equal(JSON.parse(next.reply.body).usage.completion_tokens, 4);
  console.log(`the next completion: ${next.ms} ms`);
  assert.ok(next.ms < deadline(1000), `the next completion took ${next.ms} ms`);
}

const deepArguments = `{"a":${'['.repeat(100000)}${']'.repeat(100000)}}`;
const deepCall = (tools) => ({
  messages: [
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: deepArguments } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
  ],
  max_tokens: 4,
  ...(tools ? { tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] } : {}),
});
const tooDeep = /'messages\[1\]\.tool_calls\[0\]\.function\.arguments' nests JSON deeper than 64 levels/;

test('tool-call arguments nested 100,000 deep inside a string: a 400 naming them, with or without tools', async () => {
  await refusedQuickly('/v1/chat/completions', deepCall(false), tooDeep);
  await refusedQuickly('/v1/chat/completions', deepCall(true), tooDeep);
  await refusedQuickly('/apply-template', deepCall(true), tooDeep);
});

test('an array of 200,000 empty objects is parsed and refused at once', async () => {
  const body = `{"prompt": [${Array(200000).fill('{}').join(',')}], "max_tokens": 4}`;
  await refusedQuickly('/v1/completions', body, /'prompt' must be/);
});

test('200,000 one-letter messages are refused at once', async () => {
  // 6 MB of JSON, three times the 2 MB the parser takes in 0.5 s (docs/PERFORMANCE.md): 1.5 s.
  const messages = Array.from({ length: 200000 }, () => ({ role: 'user', content: 'a' }));
  await refusedQuickly('/v1/chat/completions', { messages, max_tokens: 4 }, /cannot fit the context/, 1500);
});

test('a logit_bias of 100,000 entries is checked at once', async () => {
  const logitBias = Object.fromEntries(Array.from({ length: 100000 }, (_, i) => [String(i), -1]));
  await refusedQuickly('/v1/completions', { prompt: 'Once', max_tokens: 4, logit_bias: logitBias }, /outside the vocabulary/);
});

test('a key given twice in one object is refused rather than guessed', async () => {
  await refusedQuickly('/v1/completions', '{"prompt": "Once", "max_tokens": 4, "max_tokens": 400}', /holds the key "max_tokens" twice/);
});

test('grammars that would expand past the engine\'s limits are a 400 when the request is parsed', async () => {
  const wide = /may go on in more than 4096 ways at once/;
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, grammar: 'root ::= ("a"{0,100000}){0,100000}' }, wide);
  const alternatives = Array.from({ length: 8000 }, (_, i) => `"x${i}"`).join(' | ');
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, grammar: `root ::= ${alternatives}` }, wide);
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, grammar: `root ::=${' "a"?'.repeat(70000)}` }, wide);
});

test('schemas that would expand past the engine\'s limits are a 400 naming the limit', async () => {
  const enumeration = { enum: Array.from({ length: 8000 }, (_, i) => `v${i}`) };
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, json_schema: enumeration }, /enum lists 8000 values, more than the 4096 supported/);
  const anyOf = { anyOf: Array.from({ length: 50000 }, (_, i) => ({ const: i })) };
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, json_schema: anyOf }, /anyOf lists 50000 schemas, more than the 4096 supported/);
  const optional = { type: 'object', properties: Object.fromEntries(Array.from({ length: 10000 }, (_, i) => [`p${i}`, { type: 'integer' }])) };
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, json_schema: optional }, /10000 optional properties follow each other/);
});

test('a schema of 100,000 required properties is refused naming the grammar size limit', async () => {
  const names = Array.from({ length: 100000 }, (_, i) => `p${i}`);
  const schema = { type: 'object', properties: Object.fromEntries(names.map((name) => [name, { type: 'integer' }])), required: names };
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, json_schema: schema }, /bytes of GBNF a grammar may have/, 10000);
});

test('a $ref to itself with nothing else, or with no base case, is a 400 naming it', async () => {
  await refusedQuickly('/v1/completions', { prompt: 'a', max_tokens: 4, json_schema: { $ref: '#' } },
    /json schema at #: the schema is a \$ref to itself and nothing else/);
  const endless = { $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' } }, required: ['next'] } }, $ref: '#/$defs/node' };
  await refusedQuickly('/v1/chat/completions', { messages: [{ role: 'user', content: 'a' }], max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'n', schema: endless } } },
    /can never finish/);
});
