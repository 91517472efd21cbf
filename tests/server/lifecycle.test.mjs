// `vkllm serve` processes of this file's own: a random-weight model whose output is any bytes,
// a request deadline, SIGTERM with streams in flight, and an embeddings server of a BERT checked
// against llama.cpp's vectors. run_openai_tests.sh sets VKLLM_BIN and VKLLM_SOURCE_DIR.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { connect, request, ResponseReader, sseEvents, strictText } from './http_client.mjs';
import { post, serve, stop } from './serve.mjs';

const vkllm = process.env.VKLLM_BIN;
const sourceDir = process.env.VKLLM_SOURCE_DIR;
const stories = path.join(sourceDir, 'models', 'stories260K.gguf');
const bertVocab = path.join(sourceDir, '..', 'shared', 'testdata', 'tokenizer', 'llamacpp', 'ggml-vocab-bert-bge.gguf');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'vkllm-serve-'));
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }));

test('a random-weight model: 16 concurrent requests, half streamed, all 200 with valid UTF-8', async () => {
  const model = path.join(scratch, 'random.gguf');
  execFileSync(vkllm, ['synth', '--arch', 'llama', '--preset', 'tiny', '--type', 'q8_0', '-o', model, '--seed', '3'], { stdio: 'ignore' });
  const server = await serve(['-m', model, '--parallel', '4', '-c', '256']);
  try {
    const prompts = ['Once upon a time', 'The', 'a b c', 'Tom and Sue', '1 2 3', 'Hello', 'What', 'x'];
    const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => {
      const stream = i % 2 === 1;
      const body = { prompt: prompts[i % prompts.length], max_tokens: 48, temperature: i < 8 ? 0 : 1, seed: i, stream };
      return post(server.address, i % 4 < 2 ? '/v1/completions' : '/v1/chat/completions',
        i % 4 < 2 ? body : { ...body, prompt: undefined, messages: [{ role: 'user', content: body.prompt }] })
        .then((reply) => ({ reply, stream }));
    }));
    for (const { reply, stream } of replies) {
      assert.equal(reply.status, 200, reply.body.toString());
      const text = strictText(reply.body);
      if (!stream) {
        JSON.parse(text);
        continue;
      }
      const events = sseEvents(text);
      assert.equal(events.at(-1), '[DONE]');
      for (const event of events.slice(0, -1)) assert.ok(JSON.parse(event).choices);
    }
  } finally {
    await stop(server);
  }
});

test('a request that does not arrive within --timeout is a 408', async () => {
  const server = await serve(['-m', stories, '--parallel', '1', '-c', '128', '--timeout', '2']);
  try {
    const socket = await connect(server.address);
    const reader = new ResponseReader(socket);
    socket.write('POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n');
    const drip = setInterval(() => socket.write('X'), 300);  // each byte in time, the whole too late
    const started = Date.now();
    const reply = await reader.next(10000);
    clearInterval(drip);
    socket.destroy();
    assert.equal(reply.status, 408);
    assert.ok(Date.now() - started < 5000);
  } finally {
    await stop(server);
  }
});

test('SIGTERM during four streams: each ends with its last chunk and [DONE], and the exit code is 0', async () => {
  const server = await serve(['-m', stories, '--parallel', '4', '-c', '2048']);
  const streams = [];
  for (let i = 0; i < 4; ++i) {
    const socket = await connect(server.address);
    const reader = new ResponseReader(socket);
    let text = '';
    const started = new Promise((resolve) => socket.on('data', (data) => { text += data.toString('latin1'); if (text.includes('"text"')) resolve(); }));
    socket.write(request('POST', '/v1/completions', {
      body: { prompt: 'Once upon a time', max_tokens: 2000, ignore_eos: true, temperature: 1, seed: i, stream: true,
        stream_options: { include_usage: true } } }));
    streams.push({ socket, reader, started });
  }
  await Promise.all(streams.map((s) => s.started));
  server.child.kill('SIGTERM');
  for (const { socket, reader } of streams) {
    const reply = await reader.next(30000);
    socket.destroy();
    assert.equal(reply.status, 200);
    const events = sseEvents(strictText(reply.body));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    const last = chunks.findLast((c) => c.choices?.length);
    assert.equal(last.choices[0].finish_reason, 'length');
    const { completion_tokens } = chunks.at(-1).usage;
    assert.ok(completion_tokens > 0 && completion_tokens < 2000, `${completion_tokens} tokens`);
  }
  const { code } = await server.exited;
  assert.equal(code, 0, server.log());
});

test('an embeddings server: 32 inputs in one request, float and base64, as llama.cpp embeds them', { skip: !fs.existsSync(bertVocab) && 'no ../shared' }, async () => {
  // The BERT of tests/data/bert_embeddings, whose llama.cpp vectors mean.json holds.
  const model = path.join(scratch, 'bert-mean.gguf');
  execFileSync(vkllm, ['synth', '--arch', 'bert', '--preset', 'tiny', '--type', 'f32', '--seed', '1', '--pooling', 'mean',
    '--vocab', bertVocab, '-o', model], { stdio: 'ignore' });
  const reference = JSON.parse(fs.readFileSync(path.join(sourceDir, 'tests/data/bert_embeddings/mean.json'))).texts;
  const server = await serve(['-m', model]);
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const inputs = Array.from({ length: 32 }, (_, i) => reference[i % reference.length].text);
    const reply = await client.embeddings.create({ model: 'bert-mean', input: inputs, encoding_format: 'float' });
    assert.equal(reply.data.length, 32);
    assert.equal(reply.usage.prompt_tokens, inputs.reduce((n, _, i) => n + reference[i % reference.length].tokens.length, 0));
    for (const [i, item] of reply.data.entries()) {
      assert.equal(item.index, i);
      const expected = reference[i % reference.length];
      const norm = Math.hypot(...expected.embedding);
      let dot = 0;
      for (const [j, value] of item.embedding.entries()) {
        const want = expected.embedding[j] / norm;  // llama.cpp's vectors come unnormalized
        assert.ok(Math.abs(value - want) < 1e-3, `input ${i} value ${j}: ${value} vs ${want}`);
        dot += value * want;
      }
      assert.ok(dot >= 0.9999, `input ${i}: cosine ${dot}`);
    }
    // The openai client asks for base64 by default and decodes it into the same floats.
    const decoded = await client.embeddings.create({ model: 'bert-mean', input: inputs.slice(0, 3) });
    for (let i = 0; i < 3; ++i) assert.deepEqual(decoded.data[i].embedding, reply.data[i].embedding);
    const single = await client.embeddings.create({ model: 'bert-mean', input: reference[1].text, encoding_format: 'float' });
    assert.deepEqual(single.data[0].embedding, reply.data[1].embedding);
    const tokens = await client.embeddings.create({ model: 'bert-mean', input: [reference[2].tokens], encoding_format: 'float' });
    assert.deepEqual(tokens.data[0].embedding, reply.data[2].embedding);
    for (const [body, param] of [[{ input: [] }, 'input'], [{ input: [''] }, 'input[0]'], [{ input: 'x', encoding_format: 'hex' }, 'encoding_format'],
      [{ input: 'x', dimensions: 8 }, 'dimensions'], [{ input: [[1, -2]] }, 'input[0]'], [{ input: [[101, 102], [101, 999999]] }, 'input']]) {
      const refused = await post(server.address, '/v1/embeddings', body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(JSON.parse(refused.body).error.param, param);
    }
    const completion = await post(server.address, '/v1/completions', { prompt: 'x' });
    assert.equal(completion.status, 501);
  } finally {
    await stop(server);
  }
});
