/**
 * LSP over WebSocket, the framing of `oplens serve --ws` (server/oplens/lsp/websocket.py): one
 * JSON-RPC message per text frame, no Content-Length headers; the token goes in an
 * `Authorization: Bearer` header. Node's `ws` client sends no `Origin` header, which the server
 * requires (it refuses browser pages).
 *
 * Built on vscode-jsonrpc (what vscode-languageclient speaks through), not on the client itself,
 * so it runs, and is tested, without VS Code.
 *
 * Pure: imports no `vscode`; unit-tested in websocket.test.ts.
 */

import WebSocket from 'ws';
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-jsonrpc/node';
import type { WsFailure } from '../problems/problems';

/** What vscode-languageclient's server options may resolve to (its `MessageTransports`). */
export interface MessageTransports {
  reader: MessageReader;
  writer: MessageWriter;
  detached?: boolean;
}

/** A connection that did not open: the socket error code or the HTTP status of the refusal. */
export class WsConnectError extends Error {
  constructor(readonly failure: WsFailure) {
    super(failure.message ?? failure.code ?? `HTTP ${failure.status}`);
    this.name = 'WsConnectError';
  }
}

class FrameReader extends AbstractMessageReader implements MessageReader {
  private callback: DataCallback | undefined;
  private readonly early: Message[] = [];

  constructor(ws: WebSocket) {
    super();
    ws.on('message', (data, isBinary) => {
      let message: Message;
      try {
        message = JSON.parse(isBinary ? Buffer.from(data as Buffer).toString('utf8') : data.toString()) as Message;
      } catch (e) {
        this.fireError(new Error(`unreadable message from the OpLens server: ${(e as Error).message}`));
        return;
      }
      if (this.callback) {
        this.callback(message);
      } else {
        this.early.push(message);
      }
    });
    ws.on('close', () => this.fireClose());
    ws.on('error', (e) => this.fireError(e));
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    for (const m of this.early.splice(0)) {
      callback(m);
    }
    return { dispose: () => (this.callback = undefined) };
  }
}

class FrameWriter extends AbstractMessageWriter implements MessageWriter {
  private errors = 0;

  constructor(private readonly ws: WebSocket) {
    super();
    ws.on('close', () => this.fireClose());
  }

  write(msg: Message): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.send(JSON.stringify(msg), (error) => {
        if (error) {
          this.errors += 1;
          this.fireError(error, msg, this.errors);
          reject(error);
        } else {
          this.errors = 0;
          resolve();
        }
      });
    });
  }

  end(): void {
    this.ws.close();
  }
}

/** Open `url` (ws:// or wss://) and wrap it as LSP transports; rejects with `WsConnectError`. */
export function connectWebSocket(url: string, token: string | undefined, timeoutMs = 10_000): Promise<MessageTransports & { socket: WebSocket }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
    let settled = false;
    const ws = new WebSocket(url, { headers, handshakeTimeout: timeoutMs, maxPayload: 64 * 2 ** 20 });
    const fail = (failure: WsFailure): void => {
      if (!settled) {
        settled = true;
        ws.terminate();
        reject(new WsConnectError(failure));
      }
    };
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => fail({ status: res.statusCode, message: body.trim() }));
      res.on('error', () => fail({ status: res.statusCode }));
    });
    ws.once('error', (e: NodeJS.ErrnoException) => fail({ code: e.code, message: e.message }));
    ws.once('open', () => {
      settled = true;
      resolve({ reader: new FrameReader(ws), writer: new FrameWriter(ws), socket: ws });
    });
  });
}
