/**
 * The server over a WebSocket (`oplens.server.url`, `oplens serve --ws`, often through an SSH
 * tunnel): the token (`oplens.server.tokenFile`, else the one kept in VS Code's secret storage with
 * "Set WebSocket Server Token…"), the first connect, and a dropped connection retried with backoff
 * (reconnect.ts) with the token already given. While it is retried the state is `reconnecting` and
 * requests are refused at once with `ServerReconnecting`; once it opens again, the server starts a
 * fresh LSP session on it, as on a first start. A 401 (the token was rotated with `--new-token`)
 * stops retrying and says so as a first connect does.
 *
 * VS Code glue: imports `vscode`; its models are websocket.ts and reconnect.ts. OpLensServer
 * (server.ts) drives it through `WsHost`.
 */

import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import type { ServerOptions } from 'vscode-languageclient/node';
import type { Notifier } from '../problems/notify';
import { describeWsFailure } from '../problems/problems';
import { expandPath, type SettingsSource } from '../settings/source';
import { ServerUnavailable, type ReconnectInfo, type ServerState } from './contract';
import { Reconnector, reconnectingMessage, type ConnectionState } from './reconnect';
import { connectWebSocket, WsConnectError, type MessageTransports } from './websocket';

const TOKEN_SECRET = 'oplens.server.token';

type WsTransports = MessageTransports & { socket: { terminate(): void } };

/** What the link needs of the server it carries. */
export interface WsHost {
  isReady(): boolean;
  /** `detail`: why, for the tooltip (left as it is when not given). */
  setState(state: ServerState, detail?: string, fireAnyway?: boolean): void;
  /** The failure was shown: the close handler must not report it too. */
  failureShown(): void;
  /** Once a start in progress is over, `prepare` (the reopened socket handed over) and a fresh session. */
  startAgain(prepare: () => void): Promise<void>;
  restart(delayMs: number): Promise<void>;
}

export class WebSocketLink {
  /** The token the WebSocket was opened with, and where it came from (kept for reconnecting). */
  private auth: { token: string | undefined; source: string } | undefined;
  /** Retrying a dropped WebSocket; undefined otherwise. */
  private reconnector: Reconnector<WsTransports> | undefined;
  /** A WebSocket the reconnector opened, for the next start's client. */
  private reopened: WsTransports | undefined;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly log: vscode.LogOutputChannel,
    private readonly settings: SettingsSource,
    private readonly notifier: Notifier,
    private readonly host: WsHost,
  ) {}

  /** Retrying a dropped connection. */
  get reconnecting(): boolean {
    return this.reconnector?.active === true;
  }

  /** The attempt and the delay while the state is `reconnecting`. */
  get reconnectInfo(): ReconnectInfo | undefined {
    const s = this.reconnector?.state;
    if (s?.kind !== 'reconnecting') {
      return undefined;
    }
    const f = s.lastFailure;
    return { attempt: s.attempt, nextDelayMs: s.nextDelayMs, lastFailure: f ? (f.code ?? (f.status ? `HTTP ${f.status}` : f.message)) : undefined };
  }

  /** Why a request to `url` is refused while reconnecting, or undefined when it is not. */
  refusal(url: string): string | undefined {
    const reconnector = this.reconnector;
    return reconnector?.active ? reconnectingMessage(url, reconnector.state) : undefined;
  }

  /** The socket the reconnector opened, taken by the start that uses it (or none). */
  takeReopened(): WsTransports | undefined {
    const transports = this.reopened;
    this.reopened = undefined;
    return transports;
  }

  /** How the client connects to `url` with the token; a refused connect is shown and ends the start. */
  async serverOptions(url: string): Promise<ServerOptions> {
    const { token, source } = await this.token();
    this.auth = { token, source };
    return async () => {
      try {
        const transports = await connectWebSocket(url, token);
        this.log.info(`connected to ${url}`);
        return transports;
      } catch (e) {
        if (e instanceof WsConnectError) {
          this.host.failureShown();
          this.host.setState('failed');
          void this.notifier.show(describeWsFailure(url, e.failure, source), { restartServer: () => this.host.restart(0) });
          throw new ServerUnavailable(`cannot connect to ${url}`);
        }
        throw e;
      }
    };
  }

  private async token(): Promise<{ token: string | undefined; source: string }> {
    const file = this.settings.value.server.tokenFile;
    if (file) {
      const where = expandPath(file);
      try {
        return { token: (await fs.readFile(where, 'utf8')).trim(), source: `token file ${where}` };
      } catch (e) {
        throw new Error(`cannot read the token file ${where} (oplens.server.tokenFile): ${(e as Error).message}`);
      }
    }
    const stored = await this.secrets.get(TOKEN_SECRET);
    if (stored) {
      return { token: stored, source: 'the token stored with "OpLens: Set WebSocket Server Token…"' };
    }
    return { token: undefined, source: 'no token given: set one with "OpLens: Set WebSocket Server Token…" or oplens.server.tokenFile' };
  }

  /** Ask for the WebSocket server's token and keep it in VS Code's secret storage. */
  async setToken(): Promise<void> {
    const token = await vscode.window.showInputBox({
      title: 'OpLens WebSocket server token',
      prompt: 'The token `oplens serve --ws` printed at start (also in ~/.oplens/ws-token on its host)',
      password: true,
      ignoreFocusOut: true,
    });
    if (token === undefined) {
      return;
    }
    if (token.trim()) {
      await this.secrets.store(TOKEN_SECRET, token.trim());
    } else {
      await this.secrets.delete(TOKEN_SECRET);
    }
    if (this.settings.value.server.url) {
      await this.host.restart(0);
    }
  }

  /** The WebSocket dropped (the old session already let go): retry with backoff, with the token already given. */
  beginReconnect(url: string): void {
    this.reconnector?.stop();
    const auth = this.auth;
    const reconnector: Reconnector<WsTransports> = new Reconnector<WsTransports>({
      attempt: () => connectWebSocket(url, auth?.token),
      onState: (state) => {
        if (this.reconnector === reconnector) {
          this.onReconnectState(url, state, auth?.source ?? 'the token given');
        }
      },
      onConnected: (transports) => {
        if (this.reconnector === reconnector) {
          void this.resume(url, transports);
        } else {
          transports.socket.terminate();
        }
      },
      discard: (transports) => transports.socket.terminate(),
    });
    this.reconnector = reconnector;
    this.log.warn(`the connection to ${url} closed (the server stopped, or the tunnel went down): reconnecting`);
    reconnector.start();
    void vscode.window
      .showWarningMessage(
        `OpLens: the connection to ${url} closed (the server stopped, or the tunnel went down). Reconnecting by itself; results are kept on the host.`,
        'Reconnect',
        'Stop Reconnecting',
        'Show Output',
      )
      .then((chosen) => {
        if (chosen === 'Reconnect') {
          void this.retryNow();
        } else if (chosen === 'Stop Reconnecting') {
          this.stopReconnecting();
        } else if (chosen === 'Show Output') {
          this.log.show(true);
        }
      });
  }

  private onReconnectState(url: string, state: ConnectionState, tokenSource: string): void {
    switch (state.kind) {
      case 'reconnecting':
        if (state.lastFailure) {
          this.log.info(`reconnecting to ${url}: attempt ${state.attempt - 1} failed (${state.lastFailure.code ?? state.lastFailure.status ?? state.lastFailure.message}); next in ${state.nextDelayMs} ms`);
        }
        this.host.setState('reconnecting', undefined, true);
        return;
      case 'failed':
        this.reconnector = undefined;
        this.host.setState('failed', state.failure.status === 401 ? 'the server refused the token (401)' : `refused: HTTP ${state.failure.status ?? state.failure.code}`);
        void this.notifier.show(describeWsFailure(url, state.failure, tokenSource), { restartServer: () => this.host.restart(0) });
        return;
      case 'stopped':
      case 'connected':
        return; // stopped: whoever stopped it sets the state; connected: resume() does
    }
  }

  /** The WebSocket is open again: a fresh LSP session on it, as on a first start. */
  private async resume(url: string, transports: WsTransports): Promise<void> {
    this.log.info(`reconnected to ${url}: starting a new session (the runs it keeps come back with the open files)`);
    this.reconnector = undefined;
    await this.host.startAgain(() => {
      this.reopened = transports;
    });
    if (this.host.isReady()) {
      vscode.window.setStatusBarMessage(`$(plug) OpLens: reconnected to ${url}`, 5_000);
    }
  }

  /** The "Reconnect" button: try at once while reconnecting; otherwise start again. */
  async retryNow(): Promise<void> {
    if (this.reconnector?.active) {
      this.reconnector.retryNow();
      return;
    }
    if (!this.host.isReady()) {
      await this.host.restart(0);
    }
  }

  /** Give up reconnecting (Restart Server starts again). */
  stopReconnecting(): void {
    const r = this.reconnector;
    if (!r?.active) {
      return;
    }
    this.reconnector = undefined;
    r.stop();
    this.log.info('stopped reconnecting');
    this.host.setState('stopped', 'stopped reconnecting: Restart Server connects again');
  }

  /** The server stops: no more retries, and a socket opened for a start that will not come is closed. */
  stop(): void {
    const reconnector = this.reconnector;
    this.reconnector = undefined;
    reconnector?.stop();
    this.reopened?.socket.terminate();
    this.reopened = undefined;
  }
}
