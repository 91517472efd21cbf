// What agents ask of `vkllm serve`: structured output (a zod schema through the openai client's
// parse, json_object, a GBNF grammar), tool calls through the ChatML and Mistral template paths,
// logprobs that add up to what `vkllm eval` computes, logit_bias, and 400s naming the field of a bad
// schema, grammar or tool. Servers of its own (stories260K); run_openai_tests.sh sets VKLLM_BIN and
// VKLLM_SOURCE_DIR.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { serve, stop } from './serve.mjs';

const vkllm = process.env.VKLLM_BIN;
const sourceDir = process.env.VKLLM_SOURCE_DIR;
const stories = path.join(sourceDir, 'models', 'stories260K.gguf');
const mistralTemplate = path.join(sourceDir, '..', 'shared', 'testdata', 'chat_templates',
  'mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja');
const model = 'stories260K';
const seeds = Array.from({ length: 20 }, (_, i) => i + 1);

// stories260K through the ChatML fallback, the same with Mistral Small 3.1's template, and a model of
// random weights (any token as likely as another: the grammar alone shapes its JSON).
let chatml, mistral, random;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'vkllm-agents-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));
before(async () => {
  chatml = await serve(['-m', stories, '--parallel', '4', '-c', '2048']);
  if (fs.existsSync(mistralTemplate)) mistral = await serve(['-m', stories, '--parallel', '4', '-c', '4096', '--chat-template-file', mistralTemplate]);
  const synth = path.join(scratch, 'random.gguf');
  execFileSync(vkllm, ['synth', '--arch', 'llama', '--preset', 'tiny', '--type', 'q8_0', '--seed', '7', '-o', synth], { stdio: 'ignore' });
  random = await serve(['-m', synth, '--alias', model, '--parallel', '4', '-c', '2048']);
});
after(async () => {
  for (const server of [chatml, mistral, random]) if (server) await stop(server);
});
const structuredServers = [['stories260K', () => chatml], ['a random-weight synth model', () => random]];
const clientOf = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });

async function postJson(server, pathname, body) {
  const response = await fetch(`${server.url}${pathname}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

// `text(n)`: a string of at most n characters. JSON Schema's maxLength counts code points; zod's
// .max() counts UTF-16 units, two for a character past U+FFFF, which a random model writes.
const catOf = (text) => z.object({
  name: text(12),
  age: z.number().int().min(0).max(30),
  color: z.enum(['black', 'white', 'orange']),
  owner: z.object({ name: text(10), city: text(10).nullable() }),
  toys: z.array(text(8)).min(1).max(3),
  nickname: text(8).nullable().optional(),
});
const Cat = catOf((n) => z.string().max(n));
const CatInCodePoints = catOf((n) => z.string().refine((s) => [...s].length <= n, `at most ${n} characters`));

for (const [name, server] of structuredServers) test(`${name}: a zod schema through chat.completions.parse, 20 seeds at temperature 1 parse and validate`, async () => {
  const client = clientOf(server());
  for (const seed of seeds) {
    const request = { model, seed, temperature: 1, max_tokens: 400, messages: [{ role: 'user', content: 'Describe a cat.' }],
      response_format: zodResponseFormat(Cat, 'cat') };
    if (server() === random) {  // the client's own zod check would count UTF-16 units: parse and check here
      const completion = await client.chat.completions.create(request);
      assert.equal(completion.choices[0].finish_reason, 'stop', `seed ${seed}: ${completion.choices[0].message.content}`);
      CatInCodePoints.parse(JSON.parse(completion.choices[0].message.content));
      continue;
    }
    const completion = await client.chat.completions.parse(request);
    const message = completion.choices[0].message;
    assert.equal(completion.choices[0].finish_reason, 'stop', `seed ${seed}: ${message.content}`);
    assert.ok(message.parsed, `seed ${seed}: ${message.content}`);
    Cat.parse(message.parsed);
  }
});

for (const [name, server] of structuredServers) test(`${name}: a JSON Schema with optional properties and $refs, every reply validates`, async () => {
  const Point = z.object({ x: z.number().int().min(-9).max(9), y: z.number().int().min(-9).max(9) }).strict();
  const Shape = z.object({ kind: z.enum(['line', 'path']), points: z.array(Point).min(2).max(4), label: z.string().max(6).optional() }).strict();
  const schema = {
    $defs: { point: { type: 'object', properties: { x: { type: 'integer', minimum: -9, maximum: 9 }, y: { type: 'integer', minimum: -9, maximum: 9 } }, required: ['x', 'y'] } },
    type: 'object',
    properties: { kind: { enum: ['line', 'path'] }, points: { type: 'array', items: { $ref: '#/$defs/point' }, minItems: 2, maxItems: 4 },
      label: { type: 'string', maxLength: 6 } },
    required: ['kind', 'points'] };
  let labelled = 0;
  for (const seed of seeds) {
    const reply = await postJson(server(), '/v1/completions', { prompt: 'A shape:', seed, temperature: 1, max_tokens: 300, json_schema: schema });
    assert.equal(reply.status, 200);
    const shape = Shape.parse(JSON.parse(reply.body.choices[0].text));
    if (shape.label !== undefined) ++labelled;
  }
  console.log(`${name}: ${labelled} of ${seeds.length} shapes had the optional label`);
});

for (const [name, server] of structuredServers) test(`${name}: json_object output always parses, cut by max_tokens or not; a GBNF date grammar always matches`, async () => {
  const client = clientOf(server());
  // stories260K fills JSON strings with stories that never end: max_tokens cuts them, and the reply
  // still closes its strings and braces within it.
  for (const seed of seeds.slice(0, 10)) {
    const completion = await client.chat.completions.create({ model, seed, temperature: 1, max_tokens: 40 + 10 * seed,
      messages: [{ role: 'user', content: 'Some JSON please.' }], response_format: { type: 'json_object' } });
    const value = JSON.parse(completion.choices[0].message.content);
    assert.equal(typeof value, 'object');
    assert.ok(value !== null && !Array.isArray(value));
  }
  const grammar = String.raw`root ::= year "-" month "-" day
year ::= [12] [0-9] [0-9] [0-9]
month ::= "0" [1-9] | "1" [0-2]
day ::= "0" [1-9] | [12] [0-9] | "3" [01]`;
  for (const seed of seeds) {
    const reply = await postJson(server(), '/v1/completions', { prompt: 'The date was', seed, temperature: 1, max_tokens: 20, grammar });
    assert.equal(reply.status, 200);
    assert.match(reply.body.choices[0].text, /^[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$/);
    assert.equal(reply.body.choices[0].finish_reason, 'stop');
  }
});

const weather = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer', minimum: 1, maximum: 7 } }, required: ['city', 'unit'] } } };
const clock = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string', maxLength: 6 } }, required: ['zone'] } } };
const WeatherArguments = z.object({ city: z.string().max(12), unit: z.enum(['celsius', 'fahrenheit']), days: z.number().int().min(1).max(7).optional() }).strict();
const TimeArguments = z.object({ zone: z.string().max(6) }).strict();

function checkCalls(calls, named) {
  assert.ok(calls?.length >= 1, 'no tool calls');
  for (const call of calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
    if (named) assert.equal(call.function.name, named);
    const schema = call.function.name === 'get_weather' ? WeatherArguments : TimeArguments;
    schema.parse(JSON.parse(call.function.arguments));
  }
}

async function streamedCalls(client, params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const calls = [];
  let finish = null;
  let content = '';
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? []) calls[call.index] = call;
    finish = choice.finish_reason ?? finish;
  }
  return { calls, finish, content };
}

for (const [name, server] of [['ChatML', () => chatml], ['Mistral', () => mistral]]) {
  test(`tool_choice required and named through the ${name} template path, whole and streamed`, async (t) => {
    if (!server()) return t.skip('no ../shared (Mistral template)');
    const client = clientOf(server());
    const messages = [{ role: 'user', content: 'What is the weather in Paris, and the time?' }];
    for (const seed of seeds.slice(0, 6)) {
      // The arguments are bounded (maxLength, enums), so each call ends well within max_tokens.
      const whole = await client.chat.completions.create({ model, seed, temperature: 1, max_tokens: 800, messages,
        tools: [weather, clock], tool_choice: 'required', parallel_tool_calls: false });
      assert.equal(whole.choices[0].finish_reason, 'tool_calls', JSON.stringify(whole.choices[0]));
      assert.equal(whole.choices[0].message.tool_calls.length, 1);
      checkCalls(whole.choices[0].message.tool_calls);
      // Parallel calls (the default): this model keeps calling until max_tokens, whose last call the
      // budget closes, so every call still validates.
      const streamed = await streamedCalls(client, { model, seed, temperature: 1, max_tokens: 120, messages, tools: [weather, clock],
        tool_choice: { type: 'function', function: { name: 'get_time' } } });
      assert.ok(['tool_calls', 'length'].includes(streamed.finish), streamed.finish);
      assert.equal(streamed.content, '');
      checkCalls(streamed.calls, 'get_time');
    }
  });
}

test('a tool result on the next turn renders as the template renders it', async (t) => {
  if (!mistral) return t.skip('no ../shared (Mistral template)');
  const reference = JSON.parse(fs.readFileSync(path.join(sourceDir, 'tests/data/chat/mistral_tool_conversation.json')));
  const rendered = await postJson(mistral, '/apply-template', { messages: reference.messages, tools: reference.tools });
  assert.equal(rendered.status, 200);
  assert.equal(rendered.body.prompt, reference.output);
  // And the conversation runs: the model answers the turn after the tool's result.
  const client = clientOf(mistral);
  const reply = await client.chat.completions.create({ model, temperature: 0, max_tokens: 8, messages: reference.messages, tools: reference.tools });
  assert.ok(reply.usage.prompt_tokens > 100);
});

function logSoftmax(row, id) {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  return row[id] - max - Math.log(sum);
}

test('logprobs add up to the sequence log-probability vkllm eval computes (within 1e-4 a token)', async () => {
  // Prompts that share nothing past BOS: a prompt that reuses another's cached cells reruns its last
  // token alone, whose f16 K and V may round the other way and move later positions by ~1e-3, in
  // vkllm as in llama.cpp's cache reuse; this compares the arithmetic, not that.
  const openings = ['Once upon a time, there was a', 'The little dog ran to the', 'Lily and Tom went to'];
  for (const [i, seed] of [1, 2, 3].entries()) {
    const promptIds = JSON.parse(execFileSync(vkllm, ['tokenize', '-m', stories, '--ids', openings[i]]).toString());
    const reply = await postJson(chatml, '/v1/completions', { prompt: promptIds, seed, temperature: 1, max_tokens: 24, logprobs: 3 });
    const logprobs = reply.body.choices[0].logprobs;
    assert.equal(logprobs.tokens.length, reply.body.usage.completion_tokens);
    assert.equal(logprobs.top_logprobs[0] && Object.keys(logprobs.top_logprobs[0]).length <= 3, true);
    const ids = logprobs.content.map((entry) => entry.id);
    const file = path.join(os.tmpdir(), `vkllm-logprobs-${process.pid}-${seed}.f32`);
    execFileSync(vkllm, ['eval', '-m', stories, '--tokens', [...promptIds, ...ids].join(','), '--logits-out', file], { stdio: 'ignore' });
    const logits = new Float32Array(fs.readFileSync(file).buffer.slice(0));
    fs.rmSync(file);
    const nVocab = logits.length / (promptIds.length + ids.length);
    let expected = 0;
    ids.forEach((id, i) => {
      const row = logits.subarray((promptIds.length + i - 1) * nVocab, (promptIds.length + i) * nVocab);
      expected += logSoftmax(row, id);
    });
    const served = logprobs.token_logprobs.reduce((a, b) => a + b, 0);
    console.log(`seed ${seed}: ${ids.length} tokens, served ${served.toFixed(6)}, eval ${expected.toFixed(6)}`);
    // Decode (matvecs) and eval (matmuls) sum in different orders; a wrong row would be off by units.
    assert.ok(Math.abs(served - expected) < 1e-4 * ids.length, `${served} vs ${expected}`);
  }
  // Chat's form: content entries with their top alternatives, most likely first.
  const chat = await clientOf(chatml).chat.completions.create({ model, seed: 4, temperature: 1, max_tokens: 6, logprobs: true, top_logprobs: 2,
    messages: [{ role: 'user', content: 'Hi' }] });
  for (const entry of chat.choices[0].logprobs.content) {
    assert.equal(entry.top_logprobs.length, 2);
    assert.ok(entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob);
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token)]);
  }
});

test('logit_bias bans a token and forces another', async () => {
  const free = await postJson(chatml, '/v1/completions', { prompt: 'Once upon a time', temperature: 0, max_tokens: 6, logprobs: 0 });
  const first = free.body.choices[0].logprobs.content[0].id;
  const banned = await postJson(chatml, '/v1/completions', { prompt: 'Once upon a time', temperature: 0, max_tokens: 6, logprobs: 0,
    logit_bias: { [first]: -100 } });
  assert.ok(banned.body.choices[0].logprobs.content.every((entry) => entry.id !== first));
  const forced = await postJson(chatml, '/v1/completions', { prompt: 'Once upon a time', temperature: 1, seed: 9, max_tokens: 4, logprobs: 0,
    logit_bias: { 300: 100 } });
  assert.ok(forced.body.choices[0].logprobs.content.every((entry) => entry.id === 300));
});

test('malformed schemas, grammars, tools and tool messages get a 400 naming the field', async () => {
  const messages = [{ role: 'user', content: 'x' }];
  const cases = [
    [{ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: { a: { type: 'string', uniqueItems: 3, not: {} } } } } } }, 'response_format.json_schema.schema'],
    [{ messages, response_format: { type: 'xml' } }, 'response_format.type'],
    [{ messages, response_format: { type: 'json_schema' } }, 'response_format.json_schema'],
    [{ messages, grammar: 'root ::= ( "a" ' }, 'grammar'],
    [{ messages, grammar: 'root ::= missing' }, 'grammar'],
    [{ messages, json_schema: { $ref: '#/$defs/nowhere' } }, 'json_schema'],
    [{ messages, grammar: 'root ::= "a"', json_schema: {} }, 'grammar'],
    [{ messages, tools: [{ type: 'function' }] }, 'tools[0]'],
    [{ messages, tools: [{ type: 'function', function: { name: '' } }] }, 'tools[0].function.name'],
    [{ messages, tools: [{ type: 'function', function: { name: 'f', parameters: 'none' } }] }, 'tools[0].function.parameters'],
    [{ messages, tools: [weather], tool_choice: 'always' }, 'tool_choice'],
    [{ messages, tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    [{ messages, tool_choice: 'required' }, 'tool_choice'],
    [{ messages, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { not: { type: 'string' } } } } } }], tool_choice: 'required' }, 'tools'],
    [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'not json' } }] }] }, 'messages[0].tool_calls[0].function.arguments'],
    [{ messages: [{ role: 'assistant', tool_calls: 'x' }] }, 'messages[0].tool_calls'],
    [{ messages: [{ role: 'tool', content: '21' }] }, 'messages[0].tool_call_id'],
    [{ messages, logit_bias: { abc: 1 } }, 'logit_bias.abc'],
    [{ messages, logit_bias: { 5: 1000 } }, 'logit_bias.5'],
    [{ messages, logit_bias: { 99999: 1 } }, 'logit_bias.99999'],
    [{ messages, top_logprobs: 3 }, 'top_logprobs'],
    [{ messages, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
  ];
  for (const [body, param] of cases) {
    const reply = await postJson(chatml, '/v1/chat/completions', { model, max_tokens: 1, ...body });
    assert.equal(reply.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`);
    assert.equal(reply.body.error.param, param, JSON.stringify(reply.body));
  }
  const echoed = await postJson(chatml, '/v1/completions', { prompt: 'x', echo: true, logprobs: 1, max_tokens: 1 });
  assert.equal(echoed.body.error.param, 'logprobs');
});
