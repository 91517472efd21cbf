// `vkllm serve` processes of a test's own (VKLLM_BIN), on free ports.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, request, ResponseReader } from './http_client.mjs';

// Starts `vkllm serve` on a free port; resolves once it listens.
export async function serve(args) {
  const child = spawn(process.env.VKLLM_BIN, ['serve', '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (data) => {
      log += data;
      const found = log.match(/ on (http:\/\/[^ ]+)\/v1 /);
      if (found) resolve(found[1]);
    });
    exited.then(() => reject(new Error(`vkllm serve exited before listening:\n${log}`)));
  });
  const { hostname, port } = new URL(url);
  return { child, url, address: { host: hostname, port: Number(port) }, exited, log: () => log };
}

export async function stop(server) {
  server.child.kill('SIGTERM');
  const { code } = await server.exited;
  assert.equal(code, 0, server.log());
  assert.doesNotMatch(server.log(), /validation:/);
}

export async function post(address, pathname, body) {
  const socket = await connect(address);
  const reader = new ResponseReader(socket);
  socket.write(request('POST', pathname, { body }));
  try {
    return await reader.next(120000);
  } finally {
    socket.destroy();
  }
}

// A deadline of the hostile suites, stated for a Release build: the sanitizer build runs the same
// parsing and grammar compilation 10-30x slower, and ctest scales its deadlines (VKLLM_DEADLINE_SCALE,
// tests/server/CMakeLists.txt).
export function deadline(ms) {
  return ms * Number(process.env.VKLLM_DEADLINE_SCALE ?? 1);
}
