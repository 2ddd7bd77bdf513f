/**
 * The language server's life: start (stdio.ts: `python -m oplens serve --stdio` with the chosen
 * interpreter; or wsLink.ts: a WebSocket connection to `oplens serve --ws`, retried when it drops),
 * stop, restart (debounced), requests, and what to tell the user when it fails or dies.
 *
 * Lenses, inlay hints, hovers, diagnostics and progress are vscode-languageclient's standard
 * features. Hints and hovers are drawn as the server writes them (a distributed run's too: the
 * median across ranks, a row per rank, from the server's lsp/views.py, as every LSP client gets
 * them). The rest of the extension hears the server through events, each subscribed before the
 * first start: `onDidChangeState`; `onResult` and `onDocument`, its two notifications
 * (`oplens/result`, `oplens/document`) as they came, for their readers to parse; and
 * `routeCommand`, the server's commands that a click runs in the extension instead (the "▶ Profile"
 * lens through the profile flow, with its argument prompt and memory; the totals lens opening the
 * results panel). A server that announces another OpLens protocol in `serverInfo` (protocol.ts) is
 * stopped with a message saying what to install.
 *
 * After a dropped WebSocket reopens, a fresh LSP session starts as on a first start: the open
 * documents are sent again and the server's `oplens/document` notifications bring back the runs it
 * keeps on disk (none is re-run).
 *
 * VS Code glue: imports `vscode`; its models are contract.ts, protocol.ts, websocket.ts,
 * reconnect.ts and pathMap.ts.
 */

import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { bundleOf, type Bundle } from '../bundle/bundle';
import { DOCUMENT_NOTIFICATION, RESULT_NOTIFICATION } from '../../shared/names';
import { CELL_SCHEME } from '../notebook/notebookCall';
import type { Notifier } from '../problems/notify';
import { initializationOptions } from '../settings/settings';
import type { SettingsSource } from '../settings/source';
import { ServerReconnecting, ServerUnavailable, type ReconnectInfo, type ServerState, type WorkDoneHook } from './contract';
import type { InterpreterChooser } from './interpreter';
import { PathMap } from './pathMap';
import { checkServerProtocol } from './protocol';
import { StdioLauncher, type StdioConnection } from './stdio';
import { WebSocketLink } from './wsLink';

export type Connection = StdioConnection | { kind: 'websocket'; url: string };

/** A server command run in the extension (a lens click): its first argument in, its answer out. */
export type CommandRoute = (arg: unknown) => Promise<unknown>;

export class OpLensServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private stopping = false;
  /** The current start's failure was already shown (the close handler and start() both see it). */
  private failureReported = false;
  private starting: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private busyCount = 0;
  private _state: ServerState = 'stopped';
  private _connection: Connection | undefined;
  private _stateDetail: string | undefined;
  private readonly routes = new Map<string, CommandRoute>();
  private readonly stdio: StdioLauncher;
  private readonly ws: WebSocketLink;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly resultEmitter = new vscode.EventEmitter<unknown>();
  private readonly documentEmitter = new vscode.EventEmitter<unknown>();
  private readonly subscriptions: vscode.Disposable[] = [];

  readonly onDidChangeState = this.stateEmitter.event;
  /** An `oplens/result` notification's params: a run, to be read with runs/parseRun.ts. */
  readonly onResult = this.resultEmitter.event;
  /** An `oplens/document` notification's params: what the server knows of a document (documents/). */
  readonly onDocument = this.documentEmitter.event;
  /** The OpLens this extension ships (undefined when it runs from a source checkout without one). */
  readonly bundle: Bundle | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly settings: SettingsSource,
    interpreters: InterpreterChooser,
    private readonly notifier: Notifier,
  ) {
    const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '?');
    this.bundle = bundleOf(context.extensionPath, version, existsSync);
    this.stdio = new StdioLauncher(log, settings, interpreters, notifier, this.bundle, () => this.restart(0));
    this.ws = new WebSocketLink(context.secrets, log, settings, notifier, {
      isReady: () => this.isReady,
      setState: (state, detail, fireAnyway) => {
        if (detail !== undefined) {
          this._stateDetail = detail;
        }
        this.setState(state, fireAnyway);
      },
      failureShown: () => (this.failureReported = true),
      startAgain: async (prepare) => {
        await this.starting?.catch(() => undefined);
        prepare();
        await this.start();
      },
      restart: (delayMs) => this.restart(delayMs),
    });
    this.subscriptions.push(
      settings.onDidChangeRestartSettings(() => this.restart()),
      interpreters.onDidChange(() => {
        if (!this.settings.value.pythonPath && !this.settings.value.server.url) {
          this.log.info('the Python extension selected another interpreter: restarting the server');
          this.restart();
        }
      }),
    );
  }

  /**
   * Run `command` here when VS Code runs it (a click on a lens the server drew) instead of sending it
   * to the server. Registered before the first start; undone by disposing.
   */
  routeCommand(command: string, route: CommandRoute): vscode.Disposable {
    this.routes.set(command, route);
    return new vscode.Disposable(() => {
      if (this.routes.get(command) === route) {
        this.routes.delete(command);
      }
    });
  }

  get state(): ServerState {
    return this._state;
  }

  /** Started, and speaking this extension's protocol: requests may go out. */
  get isReady(): boolean {
    return this._state === 'ready' || this._state === 'busy';
  }

  get connection(): Connection | undefined {
    return this._connection;
  }

  /** The attempt and the delay while the state is `reconnecting`. */
  get reconnectInfo(): ReconnectInfo | undefined {
    return this.ws.reconnectInfo;
  }

  /** Why the state is what it is, where that is worth a line in the tooltip. */
  get stateDetail(): string | undefined {
    return this._stateDetail;
  }

  /** The commands the running server registers (`executeCommandProvider.commands`); undefined while none runs. */
  get serverCommands(): readonly string[] | undefined {
    const client = this.client;
    return client?.isRunning() ? (client.initializeResult?.capabilities.executeCommandProvider?.commands ?? []) : undefined;
  }

  /** The running server's `serverInfo.version` (`0.1.0+protocol.3`). */
  get serverVersion(): string | undefined {
    return this.client?.initializeResult?.serverInfo?.version;
  }

  /** Path mappings for paths inside results (the server maps document URIs itself). */
  get pathMap(): PathMap {
    return new PathMap(this.settings.value.pathMappings);
  }

  private setState(state: ServerState, fireAnyway = false): void {
    const shown: ServerState = state === 'ready' && this.busyCount > 0 ? 'busy' : state;
    if (shown !== this._state || fireAnyway) {
      this._state = shown;
      this.stateEmitter.fire(shown);
    }
  }

  /** Count a profile in flight (the status bar says "profiling…"); returns the matching release. */
  busy(): () => void {
    this.busyCount += 1;
    if (this._state === 'ready') {
      this.setState('busy');
    }
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.busyCount -= 1;
        if (this._state === 'busy' && this.busyCount === 0) {
          this._state = 'ready';
          this.stateEmitter.fire('ready');
        }
      }
    };
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    this.setState('starting');
    this.stopping = false;
    this.failureReported = false;
    this.stdio.forgetStderr();
    this._stateDetail = undefined;
    const s = this.settings.value;
    let serverOptions: ServerOptions;
    const reopened = this.ws.takeReopened();
    try {
      if (reopened && s.server.url) {
        this._connection = { kind: 'websocket', url: s.server.url };
        serverOptions = () => Promise.resolve(reopened); // opened by the reconnector, with the token it had
      } else if (s.server.url) {
        this._connection = { kind: 'websocket', url: s.server.url };
        serverOptions = await this.ws.serverOptions(s.server.url);
      } else {
        const prepared = await this.stdio.prepare();
        this._connection = prepared.connection;
        if (!prepared.serverOptions) {
          this.setState('failed'); // the preflight said why
          return;
        }
        serverOptions = prepared.serverOptions;
      }
    } catch (e) {
      this.setState('failed');
      await this.reportStartFailure(e);
      return;
    }

    const client = new LanguageClient('oplens', 'OpLens', serverOptions, this.clientOptions());
    client.onNotification(RESULT_NOTIFICATION, (params: unknown) => this.resultEmitter.fire(params));
    client.onNotification(DOCUMENT_NOTIFICATION, (params: unknown) => this.documentEmitter.fire(params));
    this.client = client;
    try {
      await client.start();
      if (!(await this.checkProtocol(client))) {
        return;
      }
      this.log.info(`server ready (${this.describeConnection()}, ${client.initializeResult?.serverInfo?.version ?? '?'})`);
      this.setState('ready');
    } catch (e) {
      this.log.error(`the server did not start: ${(e as Error).message}`);
      if (this.ws.reconnecting) {
        return; // the WebSocket dropped again while the session started: the close handler retries
      }
      if (reopened && this._connection?.kind === 'websocket' && !this.stopping) {
        this.failureReported = true; // the close handler must not report it too
        this.reconnect(this._connection.url); // it dropped again before the session was up: keep trying
        return;
      }
      this.setState('failed');
      await this.reportStartFailure(e);
    }
  }

  /** A server of another OpLens protocol is stopped, with a message naming both versions; whether it may be used. */
  private async checkProtocol(client: LanguageClient): Promise<boolean> {
    const version = String((this.context.extension.packageJSON as { version?: unknown }).version ?? '?');
    const serverInfo = client.initializeResult?.serverInfo;
    const problem = checkServerProtocol(serverInfo, version, this._connection?.kind === 'stdio' ? this.stdio.hints : undefined);
    if (!problem) {
      return true;
    }
    this.log.error(`${problem.message} (${problem.detail ?? ''})`);
    this.failureReported = true; // the close handler must not report a crash
    await this.stop();
    this.setState('failed');
    void this.notifier.show(problem, { restartServer: () => this.restart(0) });
    return false;
  }

  private clientOptions(): LanguageClientOptions {
    return {
      // Python files, and the Python cells of notebooks (each cell a document of its own, synced as a file's text)
      documentSelector: [{ scheme: 'file', language: 'python' }, { scheme: CELL_SCHEME, language: 'python' }],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      diagnosticCollectionName: 'oplens',
      initializationOptions: initializationOptions(this.settings.value),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          void this.onClosed();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        executeCommand: async (command, args, next) => {
          const route = this.routes.get(command);
          return route ? route(args[0]) : next(command, args);
        },
      },
    };
  }

  // ---- failures ---------------------------------------------------------------------------

  private async onClosed(): Promise<void> {
    if (this.stopping || this.failureReported) {
      return;
    }
    this.failureReported = true;
    const connection = this._connection;
    if (connection?.kind === 'websocket') {
      this.reconnect(connection.url);
      return;
    }
    this.setState('failed');
    void this.notifier.show(await this.stdio.describeExit(), { restartServer: () => this.restart(0) });
  }

  /** The WebSocket dropped: let the old session go, and retry (wsLink.ts). */
  private reconnect(url: string): void {
    const old = this.client;
    this.client = undefined;
    if (old) {
      void Promise.resolve()
        .then(() => old.dispose(1000))
        .catch(() => undefined); // already stopped by the close
    }
    this.ws.beginReconnect(url);
  }

  /** The "Reconnect" button: try at once while reconnecting; otherwise start again. */
  retryNow(): Promise<void> {
    return this.ws.retryNow();
  }

  /** Give up reconnecting (Restart Server starts again). */
  stopReconnecting(): void {
    this.ws.stopReconnecting();
  }

  /** Ask for the WebSocket server's token and keep it in VS Code's secret storage. */
  setToken(): Promise<void> {
    return this.ws.setToken();
  }

  private async reportStartFailure(e: unknown): Promise<void> {
    if (e instanceof ServerUnavailable || this.failureReported) {
      return; // already explained (a refused WebSocket, or the close handler)
    }
    this.failureReported = true;
    const message = (e as Error).message ?? String(e);
    if (this._connection?.kind === 'stdio') {
      void this.notifier.show(await this.stdio.describeExit(message), { restartServer: () => this.restart(0) });
      return;
    }
    void this.notifier.show(
      {
        severity: 'error',
        message: `OpLens: the server could not start: ${message}`,
        actions: [
          { kind: 'restartServer', title: 'Retry' },
          { kind: 'openSettings', title: 'Open Settings', setting: 'oplens.server' },
        ],
      },
      { restartServer: () => this.restart(0) },
    );
  }

  // ---- stop and restart -------------------------------------------------------------------

  async stop(): Promise<void> {
    this.stopping = true;
    this.ws.stop();
    const client = this.client;
    const endChild = this.stdio.detach();
    this.client = undefined;
    if (client) {
      try {
        if (client.isRunning()) {
          await client.stop(3000);
        }
      } catch (e) {
        this.log.warn(`stopping the server: ${(e as Error).message}`);
      }
      try {
        await client.dispose(1000);
      } catch {
        // already stopped
      }
    }
    endChild();
    this.setState('stopped');
  }

  /** Restart after `delayMs` (changes in quick succession restart once). */
  restart(delayMs = 400): Promise<void> {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    return new Promise((resolve) => {
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        void (async () => {
          await this.starting?.catch(() => undefined);
          await this.stop();
          await this.start();
          resolve();
        })();
      }, delayMs);
    });
  }

  // ---- requests ---------------------------------------------------------------------------

  /** The running client; waits for a start in progress; refuses at once while reconnecting (`ServerReconnecting`). */
  async ready(): Promise<LanguageClient> {
    const refusal = this._connection?.kind === 'websocket' ? this.ws.refusal(this._connection.url) : undefined;
    if (refusal) {
      throw new ServerReconnecting(refusal);
    }
    if (this.starting) {
      await this.starting;
    }
    if (this.client && this.client.isRunning()) {
      return this.client;
    }
    throw new ServerUnavailable('the OpLens server is not running');
  }

  /**
   * `workspace/executeCommand` on the server (not through VS Code's command registry). `progress`:
   * the request carries its `workDoneToken` and the server's `$/progress` for it goes to
   * `progress.onProgress` while the request runs (progress/runProgress.ts), not to the status bar.
   */
  async execute(command: string, arg: unknown, token?: vscode.CancellationToken, progress?: WorkDoneHook): Promise<unknown> {
    const client = await this.ready();
    if (!progress) {
      return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, token);
    }
    const listening = client.onProgress(WorkDoneProgress.type, progress.workDoneToken, (value) => progress.onProgress(value));
    try {
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg], workDoneToken: progress.workDoneToken }, token);
    } finally {
      listening.dispose();
    }
  }

  /** Cancel the run whose request carried `workDoneToken` (`window/workDoneProgress/cancel`): that run only. */
  async cancelProgress(workDoneToken: string): Promise<void> {
    const client = await this.ready();
    await client.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken });
  }

  describeConnection(): string {
    const c = this._connection;
    if (!c) {
      return 'not started';
    }
    return c.kind === 'websocket' ? c.url : `stdio, ${c.interpreter.command}${c.bundled ? ', bundled OpLens' : ''}`;
  }

  dispose(): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    void this.stop();
    this.subscriptions.forEach((d) => d.dispose());
    this.stateEmitter.dispose();
    this.resultEmitter.dispose();
    this.documentEmitter.dispose();
  }
}
