// What one hostile client may not do to a request's life in `vkllm serve` (issue 38): a grammar that
// fails in the scheduler (at admission, or at the first token), pipelined bursts dropped with their
// requests still running, bodies that never finish, an embedding request whose client left, and a
// header and body written apart. Each answers a 4xx (or an error event) within 1 s of the request's
// end, the server never dies, and a normal 4-token completion is answered within 1 s after each. The
// file starts servers of its own: a completions one (stories260K, 4 sequences) and an embeddings one.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connect, request, ResponseReader, sseEvents, strictText } from './http_client.mjs';
import { deadline, post, serve, stop } from './serve.mjs';

const stories = path.join(process.env.VKLLM_SOURCE_DIR, 'models', 'stories260K.gguf');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let server;
before(async () => {
  server = await serve(['-m', stories, '--parallel', '4', '-c', '2048']);
  // Every request here has this prompt: four at once build the pipelines of its prefill and of decode
  // steps of 1 to 4 sequences, which the timed requests then find ready.
  await Promise.all(Array.from({ length: 4 }, (_, i) =>
    post(server.address, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 8, temperature: 1, seed: i })));
});
after(async () => { await stop(server); });

function assertAlive(s = server) {
  assert.equal(s.child.exitCode, null, `the server exited:\n${s.log()}`);
  assert.equal(s.child.signalCode, null, `the server was killed:\n${s.log()}`);
}

// A normal 4-token completion, answered within 1 s.
async function answersPromptly(s = server) {
  assertAlive(s);
  const started = Date.now();
  const reply = await post(s.address, '/v1/completions', { prompt: 'Once upon a time', max_tokens: 4, temperature: 0 });
  const elapsed = Date.now() - started;
  assert.equal(reply.status, 200, reply.body.toString());
  assert.equal(JSON.parse(reply.body).usage.completion_tokens, 4);
  assert.ok(elapsed < deadline(1000), `a 4-token completion took ${elapsed} ms`);
}

async function metrics(s = server) {
  const text = (await fetch(`${s.url}/metrics`).then((r) => r.text()));
  const value = (name) => Number(text.match(new RegExp(`^vkllm_${name} (\\S+)$`, 'm'))[1]);
  return { processing: value('requests_processing'), queued: value('requests_queued') };
}

// Sends a body and times its answer from the moment the last byte left.
async function timed(pathname, body) {
  const socket = await connect(server.address);
  const reader = new ResponseReader(socket);
  const sent = new Promise((resolve) => socket.write(request('POST', pathname, { body }), resolve));
  await sent;
  const started = Date.now();
  try {
    const reply = await reader.next(10000);
    return { ...reply, ms: Date.now() - started };
  } finally {
    socket.destroy();
  }
}

test('grammars that fail in the scheduler are a 400 naming the grammar, streamed or not', async () => {
  const prompt = 'Once upon a time';
  // Every token banned by logit_bias: the grammar finds nothing at the first token.
  const bans = Object.fromEntries(Array.from({ length: 512 }, (_, id) => [String(id), -100]));
  // 2^13 ways to open before the first character: refused when the request is parsed, or admitted.
  const rules = Array.from({ length: 13 }, (_, i) => `r${i} ::= r${i + 1} "a" | r${i + 1} "b"`);
  const ambiguous = ['root ::= r0', ...rules, 'r13 ::= "c"'].join('\n');
  const cases = [
    { grammar: 'root ::= ("a"{0,100000}){0,100000}' },
    { grammar: ambiguous },
    { grammar: 'root ::= [a-z]+', logit_bias: bans },
    { json_schema: { type: 'object' }, logit_bias: bans },
  ];
  for (const constraint of cases) {
    const param = Object.keys(constraint)[0];
    for (const stream of [false, true]) {
      const reply = await timed('/v1/completions', { prompt, max_tokens: 8, stream, ...constraint });
      const what = `${JSON.stringify(constraint).slice(0, 60)} stream ${stream}`;
      assert.equal(reply.status, 400, `${what}: ${reply.body}`);
      const { error } = JSON.parse(strictText(reply.body));
      assert.equal(error.param, param, what);
      assert.equal(error.type, 'invalid_request_error', what);
      assert.ok(reply.ms < deadline(1000), `${what}: answered in ${reply.ms} ms`);
    }
  }
  await answersPromptly();
});

test('a grammar too ambiguous past its first letters: a begun stream ends with an error event, then [DONE]', async () => {
  // Each 'a' after the letters doubles the stacks that may close it (x or y pending at every level),
  // which no place of the grammar shows when it is parsed: it passes the parse-time width checks and
  // explodes only while generating. The letters are longer than any token, so tokens stream first.
  const grammar = ['root ::= "abcdefghijklmnopqrstuvwxyz" e', 'e ::= "a" e x | "a" e y | "a"', 'x ::= "a"', 'y ::= "a"'].join('\n');
  const body = { prompt: 'Once upon a time', max_tokens: 64, temperature: 0, grammar };
  const streamed = await timed('/v1/completions', { ...body, stream: true });
  assert.equal(streamed.status, 200);
  const events = sseEvents(strictText(streamed.body));
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
  const text = chunks.filter((c) => c.choices).map((c) => c.choices[0].text).join('');
  // The letters, then the a's it took before the stacks passed the limit.
  assert.match(text, /^abcdefghijklmnopqrstuvwxyza*$/);
  const { error } = chunks.at(-1);
  assert.equal(error.param, 'grammar');
  assert.equal(error.type, 'invalid_request_error');
  assert.match(error.message, /too ambiguous/);
  assert.ok(streamed.ms < deadline(1000), `${streamed.ms} ms`);
  const whole = await timed('/v1/completions', body);
  assert.equal(whole.status, 400, whole.body.toString());
  assert.equal(JSON.parse(whole.body).error.param, 'grammar');
  await answersPromptly();
});

test('16 pipelined POSTs on one connection, then a close, three times: nothing keeps running', async () => {
  const body = { prompt: 'Once upon a time', max_tokens: 2000, ignore_eos: true, temperature: 1 };
  for (let burst = 0; burst < 3; ++burst) {
    const socket = await connect(server.address);
    socket.on('error', () => {});
    socket.write(Buffer.concat(Array.from({ length: 16 }, (_, i) => request('POST', '/v1/completions', { body: { ...body, seed: i } }))));
    const filledBy = Date.now() + 5000;
    while ((await metrics()).processing < 4) {
      assert.ok(Date.now() < filledBy, 'the burst never filled the sequences');
      await sleep(20);
    }
    socket.destroy();
    const closed = Date.now();
    let now;
    while ((now = await metrics()).processing + now.queued > 0) {
      assert.ok(Date.now() - closed < deadline(1000), `burst ${burst}: ${JSON.stringify(now)} 1 s after the client left`);
      await sleep(20);
    }
    await answersPromptly();
  }
});

test('pipelined requests past the read-ahead wait their turn and are all answered, in order', async () => {
  const socket = await connect(server.address);
  const reader = new ResponseReader(socket);
  socket.write(Buffer.concat(Array.from({ length: 16 }, (_, i) =>
    request('POST', '/v1/completions', { body: { prompt: 'Once upon a time', max_tokens: 2, temperature: 0, seed: i } }))));
  for (let i = 0; i < 16; ++i) {
    const reply = await reader.next(10000);
    assert.equal(reply.status, 200, `request ${i}`);
    assert.equal(JSON.parse(reply.body).usage.completion_tokens, 2);
  }
  socket.destroy();
  await answersPromptly();
});

function rssBytes(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/^VmRSS:\s+(\d+) kB$/m)[1]) * 1024;
}

test('16 connections each holding 31 MB of an unfinished body: RSS stays bounded, the rest are 503', async () => {
  const length = 31 << 20;
  const chunk = Buffer.alloc(length - 1024, 'a');  // all but the last KiB: the body never ends
  const rssBefore = rssBytes(server.child.pid);
  const clients = await Promise.all(Array.from({ length: 16 }, async () => {
    const socket = await connect(server.address);
    socket.on('error', () => {});
    const reader = new ResponseReader(socket);
    const head = `POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
    socket.write(head);
    const written = new Promise((resolve) => socket.write(chunk, resolve));
    return { socket, reader, written };
  }));
  try {
    // A refused body is answered at its header; a held one is not answered at all.
    const outcomes = await Promise.all(clients.map(async ({ reader, written }) => {
      const reply = await Promise.race([reader.next(10000).catch(() => null), written.then(() => sleep(300)).then(() => null)]);
      return reply ? reply.status : 'held';
    }));
    const refused = outcomes.filter((o) => o === 503).length;
    const held = outcomes.filter((o) => o === 'held').length;
    const grown = rssBytes(server.child.pid) - rssBefore;
    console.log(`16 bodies of 31 MB: ${held} held, ${refused} refused 503; RSS grew ${(grown / 1e6).toFixed(0)} MB`);
    assert.equal(held + refused, 16, JSON.stringify(outcomes));
    assert.ok(held <= 4, JSON.stringify(outcomes));  // 128 MiB holds four bodies of 31 MiB
    assert.ok(grown < 200e6, `RSS grew ${grown} bytes`);
  } finally {
    for (const { socket } of clients) socket.destroy();
  }
  // A single body past the per-body limit is a 413 from its header alone.
  const socket = await connect(server.address);
  const reader = new ResponseReader(socket);
  socket.write(`POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${33 << 20}\r\n\r\n`);
  assert.equal((await reader.next(1000)).status, 413);
  socket.destroy();
  await sleep(100);  // the closed connections give their bodies back
  await answersPromptly();
});

test('a header and its body written apart are answered without a delayed-ACK stall', async () => {
  const socket = await connect(server.address);
  socket.setNoDelay(false);  // as a client that leaves Nagle on: the body waits for the header's ACK
  const reader = new ResponseReader(socket);
  const body = Buffer.from(JSON.stringify({ input: 'x' }));
  const head = `POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  const times = [];
  try {
    for (let i = 0; i < 9; ++i) {
      const started = process.hrtime.bigint();
      socket.write(head);
      socket.write(body);
      assert.equal((await reader.next()).status, 501);  // a completions server: answered once the body is in
      if (i > 0) times.push(Number(process.hrtime.bigint() - started) / 1e6);  // the first opens the connection
    }
  } finally {
    socket.destroy();
  }
  times.sort((a, b) => a - b);
  console.log(`header and body apart: median ${times[4].toFixed(2)} ms, max ${times.at(-1).toFixed(2)} ms`);
  assert.ok(times[4] < 20, `median ${times[4]} ms`);
  await answersPromptly();
});

test('an embedding request whose client left after 1 s frees the embedder for the next', async () => {
  const embedder = await serve(['-m', stories, '--embeddings', '-c', '64']);
  try {
    const inputs = Array.from({ length: 2048 }, (_, i) => Array.from({ length: 50 }, (_, j) => 1 + ((i * 50 + j) % 500)));
    // The pipelines of both input lengths are built first, so that the times below are the embedder's.
    for (const input of [[inputs[0]], 'Once upon a time'])
      assert.equal((await post(embedder.address, '/v1/embeddings', { input })).status, 200);
    const socket = await connect(embedder.address);
    socket.on('error', () => {});
    socket.write(request('POST', '/v1/embeddings', { body: { input: inputs } }));
    await sleep(1000);
    socket.destroy();
    const started = Date.now();
    const reply = await post(embedder.address, '/v1/embeddings', { input: 'Once upon a time' });
    const elapsed = Date.now() - started;
    assert.equal(reply.status, 200, reply.body.toString());
    assert.equal(JSON.parse(reply.body).data.length, 1);
    console.log(`the next embedding request after a client left mid-way: ${elapsed} ms`);
    assert.ok(elapsed < deadline(1000), `${elapsed} ms`);
    assertAlive(embedder);
  } finally {
    await stop(embedder);
  }
  await answersPromptly();
});
