'use strict';
// A minimal HTTP/1.1 client over one raw TCP connection, for the victim and
// the attackers of the isolation suite: requests are prebuilt bytes, answers
// are framed by Content-Length only (every Cerulean answer has one), and
// requests may be pipelined (answers come back in order). Costs the test
// process little CPU per request, unlike http.request.

const net = require('node:net');

const CRLFCRLF = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);

class RawConnection {
  // Use RawConnection.open.
  constructor(sock) {
    this.sock = sock;
    this.head = EMPTY;     // bytes of an answer's head read so far
    this.current = null;   // the answer whose body is being read
    this.waiting = [];     // {resolve, reject, keepBody}, in request order
    this.unclaimed = [];   // answers that came before anyone asked for them
    this.closed = false;
    this.error = null;
    sock.setNoDelay(true);
    sock.on('data', (d) => this.onData(d));
    sock.on('error', (e) => { this.error = e; });
    sock.on('close', () => {
      this.closed = true;
      const err = this.error || new Error('connection closed by the server');
      for (const w of this.waiting.splice(0)) w.reject(err);
    });
  }

  // Resolves to a connected RawConnection to host:port.
  static open(host, port) {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, host);
      sock.once('connect', () => {
        sock.removeListener('error', reject);
        resolve(new RawConnection(sock));
      });
      sock.once('error', reject);
    });
  }

  // Parses answers as they arrive; a body is counted, and kept only when
  // the waiting request asked for it.
  onData(d) {
    let data = d;
    while (data.length > 0) {
      if (this.current === null) {
        this.head = this.head.length === 0 ? data : Buffer.concat([this.head, data]);
        const end = this.head.indexOf(CRLFCRLF);
        if (end < 0) return;
        const head = this.head.toString('latin1', 0, end);
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        const length = m ? Number(m[1]) : 0;
        const keepBody = this.waiting.length > 0 && this.waiting[0].keepBody;
        this.current = { status: Number(head.slice(9, 12)), head, length, remaining: length, chunks: keepBody ? [] : null };
        data = this.head.subarray(end + 4);
        this.head = EMPTY;
      }
      const take = Math.min(this.current.remaining, data.length);
      if (this.current.chunks) this.current.chunks.push(data.subarray(0, take));
      this.current.remaining -= take;
      data = data.subarray(take);
      if (this.current.remaining > 0) return;
      const { status, head, length, chunks } = this.current;
      this.current = null;
      const answer = { status, head, length, body: chunks ? Buffer.concat(chunks).toString('utf8') : undefined };
      if (this.waiting.length > 0) this.waiting.shift().resolve(answer);
      else this.unclaimed.push(answer);
    }
  }

  // Sends `bytes` (one or more whole requests) without waiting.
  write(bytes) {
    return this.sock.write(bytes);
  }

  // Resolves to the next answer on this connection: {status, head, length,
  // body (when keepBody)}; rejects when the connection closes first.
  next({ keepBody = false } = {}) {
    if (this.unclaimed.length > 0) return Promise.resolve(this.unclaimed.shift());
    if (this.closed) return Promise.reject(this.error || new Error('connection closed'));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject, keepBody }));
  }

  // Sends one request and resolves to its answer.
  send(bytes, options) {
    const answer = this.next(options);
    this.write(bytes);
    return answer;
  }

  destroy() {
    this.sock.destroy();
  }
}

module.exports = { RawConnection };
