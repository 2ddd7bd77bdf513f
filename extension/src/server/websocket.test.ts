import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { connectWebSocket, WsConnectError } from './websocket';

/**
 * A stand-in for `oplens serve --ws` with its guard (server/oplens/lsp/websocket.py): a browser
 * page (an Origin header) gets 403, a wrong or missing token 401; otherwise one JSON-RPC message
 * per text frame, answered in kind.
 */
const TOKEN = 's3cret-token';
let server: WebSocketServer;
let url = '';
const seenHeaders: Record<string, string | undefined>[] = [];

before(async () => {
  server = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    verifyClient: (info, done) => {
      seenHeaders.push({ origin: info.req.headers.origin, authorization: info.req.headers.authorization });
      if (info.req.headers.origin) {
        done(false, 403, 'OpLens does not accept connections from web pages.');
      } else if (info.req.headers.authorization !== `Bearer ${TOKEN}`) {
        done(false, 401, 'OpLens needs its token');
      } else {
        done(true);
      }
    },
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('connection', (socket) => {
    socket.on('message', (data, isBinary) => {
      assert.equal(isBinary, false, 'messages go as text frames');
      const message = JSON.parse(data.toString()) as { id?: number; method: string; params?: unknown };
      if (message.method === 'initialize') {
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { capabilities: { executeCommandProvider: { commands: ['oplens.profile'] } } } }));
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'oplens/result', params: { uri: 'file:///m.py', run: {} } }));
      } else if (message.method === 'bye') {
        socket.close();
      }
    });
  });
});

after(() => {
  server.close();
});

describe('connectWebSocket', () => {
  it('sends the token as a bearer header, no Origin, and speaks one message per frame', async () => {
    const { reader, writer, socket } = await connectWebSocket(url, TOKEN);
    const received: unknown[] = [];
    const gotTwo = new Promise<void>((resolve) => {
      reader.listen((m) => {
        received.push(m);
        if (received.length === 2) {
          resolve();
        }
      });
    });
    await writer.write({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } as never);
    await gotTwo;
    assert.deepEqual((received[0] as { id: number }).id, 1);
    assert.equal((received[1] as { method: string }).method, 'oplens/result');
    const last = seenHeaders[seenHeaders.length - 1];
    assert.equal(last?.authorization, `Bearer ${TOKEN}`);
    assert.equal(last?.origin, undefined);
    const closed = new Promise<void>((resolve) => reader.onClose(() => resolve()));
    await writer.write({ jsonrpc: '2.0', method: 'bye' } as never);
    await closed; // the server's close reaches the client as the reader's close
    socket.terminate();
  });

  it('a wrong token: WsConnectError with HTTP 401', async () => {
    await assert.rejects(connectWebSocket(url, 'wrong'), (e: unknown) => e instanceof WsConnectError && e.failure.status === 401);
    await assert.rejects(connectWebSocket(url, undefined), (e: unknown) => e instanceof WsConnectError && e.failure.status === 401);
  });

  it('nothing listening: WsConnectError with ECONNREFUSED', async () => {
    const closed = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => closed.once('listening', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await assert.rejects(connectWebSocket(`ws://127.0.0.1:${port}`, TOKEN), (e: unknown) => e instanceof WsConnectError && e.failure.code === 'ECONNREFUSED');
  });
});
