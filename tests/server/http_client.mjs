// Raw HTTP/1.1 over node:net, for what a client library would not send or would hide: pipelined and
// malformed requests, slow and idle connections, exact bytes. Responses are parsed as they arrive
// (Content-Length and chunked bodies), so many can be read from one connection.
import net from 'node:net';

export function endpoint(baseURL) {
  const url = new URL(baseURL);
  return { host: url.hostname, port: Number(url.port) };
}

export function connect({ host, port }) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port }, () => resolve(socket));
    socket.once('error', reject);
  });
}

// Reads whole responses from one socket, in order.
export class ResponseReader {
  constructor(socket) {
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    this.waiters = [];
    this.closed = false;
    socket.on('data', (data) => { this.buffer = Buffer.concat([this.buffer, data]); this.#wake(); });
    socket.on('close', () => { this.closed = true; this.#wake(); });
    socket.on('error', () => {});
  }

  #wake() { for (const wake of this.waiters.splice(0)) wake(); }

  async #more(deadline) {
    if (this.closed) throw new Error('the server closed the connection');
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no response in time')), Math.max(0, deadline - Date.now()));
      this.waiters.push(() => { clearTimeout(timer); resolve(); });
    });
  }

  // The next response: { status, headers (lower-case names), body (Buffer), chunks (raw chunk payloads) }.
  async next(timeoutMs = 10000) {
    const deadline = Date.now() + timeoutMs;
    let end;
    while ((end = this.buffer.indexOf('\r\n\r\n')) < 0) await this.#more(deadline);
    const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    this.buffer = this.buffer.subarray(end + 4);
    const status = Number(head[0].split(' ')[1]);
    const headers = {};
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    if (status === 100) return this.next(timeoutMs);
    const chunks = [];
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        let lineEnd;
        while ((lineEnd = this.buffer.indexOf('\r\n')) < 0) await this.#more(deadline);
        const size = parseInt(this.buffer.subarray(0, lineEnd).toString('latin1'), 16);
        while (this.buffer.length < lineEnd + 2 + size + 2) await this.#more(deadline);
        chunks.push(this.buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        this.buffer = this.buffer.subarray(lineEnd + 2 + size + 2);
        if (size === 0) break;
      }
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      while (this.buffer.length < length) await this.#more(deadline);
      chunks.push(this.buffer.subarray(0, length));
      this.buffer = this.buffer.subarray(length);
    } else {
      while (!this.closed) await this.#more(deadline);
      chunks.push(this.buffer);
      this.buffer = Buffer.alloc(0);
    }
    return { status, headers, body: Buffer.concat(chunks), chunks };
  }
}

export function request(method, path, { body, headers = {}, version = '1.1' } = {}) {
  const payload = body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const lines = [`${method} ${path} HTTP/${version}`, 'Host: localhost'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (method !== 'GET' || payload.length) lines.push('Content-Type: application/json', `Content-Length: ${payload.length}`);
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), payload]);
}

// The whole body as UTF-8, refusing any byte that is not valid UTF-8.
export function strictText(buffer) {
  return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
}

// The `data:` payloads of a server-sent event stream.
export function sseEvents(text) {
  return text.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
}
