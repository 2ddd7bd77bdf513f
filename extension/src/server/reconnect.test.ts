import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { backoffDelay, DEFAULT_BACKOFF, isFatalFailure, Reconnector, reconnectingMessage, type Backoff, type ConnectionState } from './reconnect';
import { connectWebSocket, type MessageTransports } from './websocket';

/**
 * The reconnect machine against a real `ws` server on loopback (a stand-in for `oplens serve --ws`
 * with its token guard): the server goes away, the attempts follow the schedule (small delays for
 * the test), a server comes back on the same port and the machine reconnects; a rotated token (401)
 * stops it.
 */
const TOKEN = 's3cret-token';
const FAST: Backoff = { initialMs: 20, maxMs: 80, factor: 2, jitter: 0 };

async function listen(port: number, token = TOKEN): Promise<WebSocketServer> {
  const server = new WebSocketServer({
    port,
    host: '127.0.0.1',
    verifyClient: (info, done) => (info.req.headers.authorization === `Bearer ${token}` ? done(true) : done(false, 401, 'OpLens needs its token')),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  return server;
}

async function shut(server: WebSocketServer): Promise<void> {
  for (const client of server.clients) {
    client.terminate();
  }
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

const portOf = (server: WebSocketServer): number => (server.address() as AddressInfo).port;

function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (check()) {
        resolve();
      } else if (Date.now() > deadline) {
        reject(new Error('timed out waiting'));
      } else {
        setTimeout(tick, 5);
      }
    };
    tick();
  });
}

type Transports = MessageTransports & { socket: WebSocket };

describe('backoffDelay', () => {
  it('1 s, 2 s, 4 s … capped at 30 s', () => {
    const none = { ...DEFAULT_BACKOFF, jitter: 0 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffDelay(n, none)),
      [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000, 30_000],
    );
  });

  it('jitters by at most ±10 %, never past the cap', () => {
    assert.equal(backoffDelay(2, DEFAULT_BACKOFF, () => 0), 1_800);
    assert.equal(backoffDelay(2, DEFAULT_BACKOFF, () => 1), 2_200);
    assert.equal(backoffDelay(10, DEFAULT_BACKOFF, () => 1), 30_000);
    assert.equal(backoffDelay(10, DEFAULT_BACKOFF, () => 0), 27_000);
    for (let i = 0; i < 200; i += 1) {
      const d = backoffDelay(3, DEFAULT_BACKOFF);
      assert.ok(d >= 3_600 && d <= 4_400, String(d));
    }
  });

  it('only a refused token or origin is final', () => {
    assert.equal(isFatalFailure({ status: 401 }), true);
    assert.equal(isFatalFailure({ status: 403 }), true);
    assert.equal(isFatalFailure({ code: 'ECONNREFUSED' }), false);
    assert.equal(isFatalFailure({ code: 'ECONNRESET' }), false);
    assert.equal(isFatalFailure({ status: 502 }), false);
  });

  it('says what a command issued meanwhile is told', () => {
    const m = reconnectingMessage('ws://localhost:8765', { kind: 'reconnecting', attempt: 3, nextDelayMs: 4_000 });
    assert.match(m, /reconnecting to ws:\/\/localhost:8765/);
    assert.match(m, /attempt 3, next try in 4 s/);
    assert.match(m, /once connected/);
    assert.doesNotMatch(m, /not running/); // the profile errors' "the server stopped" test (problems.ts) must not take it
  });
});

describe('Reconnector against a real WebSocket server', () => {
  it('retries on the schedule while the server is gone, reconnects when it is back on the same port', async () => {
    let server = await listen(0);
    const port = portOf(server);
    const url = `ws://127.0.0.1:${port}`;
    const first = await connectWebSocket(url, TOKEN);

    const states: (ConnectionState & { at: number })[] = [];
    const attempts: number[] = [];
    const got1: { t?: Transports } = {};
    const r = new Reconnector<Transports>({
      attempt: () => {
        attempts.push(Date.now());
        return connectWebSocket(url, TOKEN, 1_000);
      },
      onConnected: (t) => (got1.t = t),
      onState: (s) => states.push({ ...s, at: Date.now() }),
      backoff: FAST,
    });
    first.reader.onClose(() => r.start()); // what the server does when the client's transport closes

    await shut(server); // the tunnel went down
    await until(() => attempts.length >= 5);
    assert.ok(got1.t === undefined, 'not connected while the server is gone');
    const reconnecting = states.filter((s): s is Extract<ConnectionState, { kind: 'reconnecting' }> & { at: number } => s.kind === 'reconnecting');
    assert.deepEqual(
      reconnecting.slice(0, 5).map((s) => [s.attempt, s.nextDelayMs]),
      [
        [1, 20],
        [2, 40],
        [3, 80],
        [4, 80],
        [5, 80],
      ],
    );
    assert.equal(reconnecting[1]?.lastFailure?.code, 'ECONNREFUSED');
    // each attempt waited (about) its delay after the state that announced it
    for (let i = 0; i < 4; i += 1) {
      const announced = reconnecting[i];
      const at = attempts[i];
      assert.ok(announced && at !== undefined && at - announced.at >= (announced.nextDelayMs ?? 0) - 5, `attempt ${i + 1} came too early`);
    }
    assert.equal(r.active, true);

    server = await listen(port); // the tunnel is back
    await until(() => got1.t !== undefined);
    const conn = got1.t as Transports | undefined; // (set by the callback; the compiler saw it undefined above)
    assert.ok(conn);
    assert.deepEqual(r.state, { kind: 'connected' });
    assert.equal(r.active, false);
    assert.equal(states[states.length - 1]?.kind, 'connected');

    // the new connection is a working one: the server sees a message from it
    const [peer] = [...server.clients];
    assert.ok(peer, 'the server holds the new connection');
    const got = new Promise<string>((resolve) => peer.once('message', (d) => resolve(d.toString())));
    await conn.writer.write({ jsonrpc: '2.0', method: 'hello' } as never);
    assert.match(await got, /hello/);
    const count = attempts.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(attempts.length, count, 'no attempts once connected');
    conn.socket.terminate();
    await shut(server);
  });

  it('a 401 on reconnect (the token was rotated) stops retrying: failed', async () => {
    const rotated = await listen(0, 'the-new-token');
    const url = `ws://127.0.0.1:${portOf(rotated)}`;
    let attempts = 0;
    const r = new Reconnector<Transports>({
      attempt: () => {
        attempts += 1;
        return connectWebSocket(url, TOKEN, 1_000);
      },
      onConnected: () => assert.fail('must not connect with the old token'),
      backoff: FAST,
    });
    r.start();
    await until(() => r.state.kind === 'failed');
    assert.equal(r.state.kind === 'failed' && r.state.failure.status, 401);
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(attempts, 1, 'no retry after a 401');
    assert.equal(r.active, false);
    await shut(rotated);
  });

  it('stop() ends it; retryNow() tries at once', async () => {
    const probe = await listen(0);
    const port = portOf(probe);
    await shut(probe);
    const url = `ws://127.0.0.1:${port}`;
    let attempts = 0;
    let connected: Transports | undefined;
    const r = new Reconnector<Transports>({
      attempt: () => {
        attempts += 1;
        return connectWebSocket(url, TOKEN, 1_000);
      },
      onConnected: (t) => (connected = t),
      backoff: { initialMs: 60_000, maxMs: 60_000, factor: 2, jitter: 0 }, // nothing would happen by itself here
    });
    r.start();
    assert.deepEqual(r.state, { kind: 'reconnecting', attempt: 1, nextDelayMs: 60_000, lastFailure: undefined });
    const server = await listen(port);
    r.retryNow(); // the "Reconnect" button
    await until(() => connected !== undefined);
    assert.equal(attempts, 1);
    assert.equal(r.state.kind, 'connected');
    connected?.socket.terminate();

    const stopped = new Reconnector<Transports>({
      attempt: () => connectWebSocket(url, TOKEN, 1_000),
      onConnected: () => assert.fail('stopped'),
      discard: (t) => t.socket.terminate(),
      backoff: FAST,
    });
    stopped.start();
    stopped.stop();
    assert.deepEqual(stopped.state, { kind: 'stopped' });
    stopped.retryNow(); // does nothing once stopped
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(stopped.state, { kind: 'stopped' });
    await shut(server);
  });
});
