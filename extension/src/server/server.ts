/**
 * The language server's life: start (`python -m oplens serve --stdio` with the chosen interpreter,
 * the extension's bundled OpLens first on its path unless `oplens.importStrategy` says
 * `fromEnvironment` (bundle.ts), after a quick check that it has oplens and torch; or a WebSocket
 * connection to `oplens serve --ws`), stop, restart (debounced), and what to tell the user when it
 * fails or dies.
 *
 * Lenses, inlay hints, hovers, diagnostics and progress are vscode-languageclient's standard
 * features. Two of the server's commands are routed back into the extension (see `middleware`):
 * a click on the "▶ Profile" lens goes through the extension's profile flow (argument prompt and
 * memory), and a click on the totals lens opens the results panel. Hints and hovers are drawn as
 * the server writes them (a distributed run's too: the median across ranks, a row per rank, from
 * the server's lsp/views.py, as every LSP client gets them). The server's two notifications
 * (`oplens/result`, `oplens/document`) go to the hooks. A server that announces another OpLens
 * protocol in `serverInfo` (protocol.ts) is stopped with a message saying what to install.
 *
 * A WebSocket that drops (the SSH tunnel went down, the server restarted) is retried with backoff
 * (reconnect.ts) with the token already given; meanwhile the state is `reconnecting` and requests
 * are refused at once with `ServerReconnecting`. Once it opens again a fresh LSP session starts, as
 * on a first start: the open documents are sent again and the server's `oplens/document`
 * notifications bring back the runs it keeps on disk (none is re-run). A 401 (the token was
 * rotated with `--new-token`) stops retrying and says so as a first connect does.
 *
 * VS Code glue: imports `vscode`; its models are protocol.ts, websocket.ts, reconnect.ts and pathMap.ts.
 */

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
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
import { BUNDLED_LIBS_ENV, bundleOf, serverEnvironment, type Bundle } from '../bundle/bundle';
import { DOCUMENT_NOTIFICATION, HOT_FUNCTIONS_COMMAND, PROFILE_COMMAND, RESULT_NOTIFICATION, SHOW_RUN_COMMAND } from '../../shared/names';
import { CELL_SCHEME } from '../notebook/notebookCall';
import type { Notifier } from '../problems/notify';
import { describeServerExit, describeWsFailure, diagnosePreflight, PREFLIGHT_SCRIPT, type InstallHints, type PreflightOutcome } from '../problems/problems';
import { initializationOptions, serverArgs } from '../settings/settings';
import { expandPath, workspaceRoot, type SettingsSource } from '../settings/source';
import { ServerReconnecting, ServerUnavailable, type ReconnectInfo, type ServerState, type WorkDoneHook } from './contract';
import type { Interpreter, InterpreterChooser } from './interpreter';
import { PathMap } from './pathMap';
import { checkServerProtocol } from './protocol';
import { Reconnector, reconnectingMessage, type ConnectionState } from './reconnect';
import { connectWebSocket, WsConnectError, type MessageTransports } from './websocket';

const TOKEN_SECRET = 'oplens.server.token';
const STDERR_TAIL = 8_000;

/** What the server's own commands do when VS Code runs them (lens clicks). */
export interface ServerHooks {
  onResult(params: unknown): void;
  onDocument(params: unknown): void;
  profileFromLens(arg: unknown): Promise<unknown>;
  showRunFromLens(arg: unknown): Promise<unknown>;
  /** An overview's share lens: the Hot Functions view. */
  showHotFunctions(): Promise<unknown>;
}

/** `bundled`: the server runs from the extension's bundled OpLens (else the interpreter's own). */
export type Connection = { kind: 'stdio'; interpreter: Interpreter; cwd: string; bundled: boolean } | { kind: 'websocket'; url: string };

type WsTransports = MessageTransports & { socket: { terminate(): void } };

export class OpLensServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private child: ChildProcess | undefined;
  private childExit: Promise<{ code: number | null; signal: string | null }> | undefined;
  private stderrTail = '';
  private stopping = false;
  /** The current start's failure was already shown (the close handler and start() both see it). */
  private failureReported = false;
  private starting: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private busyCount = 0;
  private _state: ServerState = 'stopped';
  private _connection: Connection | undefined;
  private hints: InstallHints | undefined;
  /** The token the WebSocket was opened with, and where it came from (kept for reconnecting). */
  private wsAuth: { token: string | undefined; source: string } | undefined;
  /** Retrying a dropped WebSocket; undefined otherwise. */
  private reconnector: Reconnector<WsTransports> | undefined;
  /** A WebSocket the reconnector opened, for the next start's client. */
  private pendingTransports: WsTransports | undefined;
  private _stateDetail: string | undefined;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  private readonly subscriptions: vscode.Disposable[] = [];

  readonly onDidChangeState = this.stateEmitter.event;
  /** The OpLens this extension ships (undefined when it runs from a source checkout without one). */
  readonly bundle: Bundle | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
    private readonly settings: SettingsSource,
    private readonly interpreters: InterpreterChooser,
    private readonly notifier: Notifier,
    private readonly hooks: ServerHooks,
  ) {
    const version = String((context.extension.packageJSON as { version?: unknown }).version ?? '?');
    this.bundle = bundleOf(context.extensionPath, version, existsSync);
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
    const s = this.reconnector?.state;
    if (s?.kind !== 'reconnecting') {
      return undefined;
    }
    const f = s.lastFailure;
    return { attempt: s.attempt, nextDelayMs: s.nextDelayMs, lastFailure: f ? (f.code ?? (f.status ? `HTTP ${f.status}` : f.message)) : undefined };
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
    this.stderrTail = '';
    this._stateDetail = undefined;
    const s = this.settings.value;
    let serverOptions: ServerOptions;
    const reopened = this.pendingTransports;
    this.pendingTransports = undefined;
    try {
      if (reopened && s.server.url) {
        this._connection = { kind: 'websocket', url: s.server.url };
        serverOptions = () => Promise.resolve(reopened); // opened by the reconnector, with the token it had
      } else if (s.server.url) {
        this._connection = { kind: 'websocket', url: s.server.url };
        serverOptions = await this.websocketOptions(s.server.url);
      } else {
        const resource = vscode.window.activeTextEditor?.document.uri;
        const interpreter = await this.interpreters.choose(s.pythonPath, resource);
        const cwd = workspaceRoot()?.uri.fsPath ?? (resource?.scheme === 'file' ? path.dirname(resource.fsPath) : os.homedir());
        const libs = this.bundledLibs(s.importStrategy);
        const env = serverEnvironment(process.env, libs);
        this._connection = { kind: 'stdio', interpreter, cwd, bundled: libs !== undefined };
        this.hints = await this.installHints(interpreter, libs !== undefined);
        if (!(await this.preflight(interpreter, cwd, this.hints, env))) {
          this.setState('failed');
          return;
        }
        serverOptions = () => Promise.resolve(this.spawnServer(interpreter, cwd, env));
      }
    } catch (e) {
      this.setState('failed');
      await this.reportStartFailure(e);
      return;
    }

    const client = new LanguageClient('oplens', 'OpLens', serverOptions, this.clientOptions());
    client.onNotification(RESULT_NOTIFICATION, (params: unknown) => this.hooks.onResult(params));
    client.onNotification(DOCUMENT_NOTIFICATION, (params: unknown) => this.hooks.onDocument(params));
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
      if (this.reconnector?.active) {
        return; // the WebSocket dropped again while the session started: the close handler retries
      }
      if (reopened && this._connection?.kind === 'websocket' && !this.stopping) {
        this.failureReported = true; // the close handler must not report it too
        this.beginReconnect(this._connection.url); // it dropped again before the session was up: keep trying
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
    const problem = checkServerProtocol(serverInfo, version, this._connection?.kind === 'stdio' ? this.hints : undefined);
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
          if (command === PROFILE_COMMAND) {
            return this.hooks.profileFromLens(args[0]);
          }
          if (command === SHOW_RUN_COMMAND) {
            return this.hooks.showRunFromLens(args[0]);
          }
          if (command === HOT_FUNCTIONS_COMMAND) {
            return this.hooks.showHotFunctions();
          }
          return next(command, args);
        },
      },
    };
  }

  // ---- stdio ------------------------------------------------------------------------------

  /** The bundled libraries the server runs from, or undefined: the interpreter's own OpLens. */
  private bundledLibs(strategy: 'useBundled' | 'fromEnvironment'): string | undefined {
    if (strategy === 'fromEnvironment') {
      return undefined;
    }
    if (!this.bundle) {
      this.log.warn("oplens.importStrategy is useBundled, but this copy of the extension has no bundled OpLens: using the interpreter's own");
    }
    return this.bundle?.libs;
  }

  private async installHints(interpreter: Interpreter, bundled: boolean): Promise<InstallHints> {
    const root = workspaceRoot()?.uri.fsPath;
    let sourceTree: string | undefined;
    if (root) {
      try {
        const pyproject = await fs.readFile(path.join(root, 'pyproject.toml'), 'utf8');
        if (/^name\s*=\s*"oplens"/m.test(pyproject)) {
          sourceTree = root;
        }
      } catch {
        // not the OpLens source tree
      }
    }
    return {
      python: interpreter.command,
      origin: interpreter.origin,
      pythonExtension: interpreter.pythonExtension,
      sourceTree,
      bundle: this.bundle && { wheels: this.bundle.wheels, version: this.bundle.version },
      bundled,
    };
  }

  /** Can this interpreter run the server (oplens) and its worker (torch)? Says what to do when not. */
  private async preflight(interpreter: Interpreter, cwd: string, hints: InstallHints, env: NodeJS.ProcessEnv): Promise<boolean> {
    const outcome = await new Promise<PreflightOutcome>((resolve) => {
      execFile(interpreter.command, ['-c', PREFLIGHT_SCRIPT], { cwd, env, timeout: 30_000, windowsHide: true }, (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { killed?: boolean; code?: string | number }) | null;
        if (err && typeof err.code === 'string') {
          resolve({ spawnError: err.code, exitCode: null, stdout, stderr });
        } else {
          resolve({ exitCode: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr, timedOut: err?.killed === true });
        }
      });
    });
    const verdict = diagnosePreflight(outcome, hints);
    if (verdict.report) {
      this.log.info(
        `interpreter ${interpreter.command} (${interpreter.origin}): Python ${verdict.report.python}, ` +
          `oplens ${verdict.report.oplens ?? 'missing'}${hints.bundled ? ' (bundled)' : ''}, torch ${verdict.report.torch ?? 'missing'}`,
      );
    }
    if (verdict.problem) {
      void this.notifier.show(verdict.problem, { restartServer: () => this.restart(0) });
    }
    return !verdict.fatal;
  }

  private spawnServer(interpreter: Interpreter, cwd: string, env: NodeJS.ProcessEnv): ChildProcess {
    const args = serverArgs(this.settings.value);
    const runs = this.settings.value.runsDirectory;
    if (runs) {
      args[args.indexOf('--out') + 1] = expandPath(runs);
    }
    const libs = env[BUNDLED_LIBS_ENV];
    this.log.info(`starting ${interpreter.command} ${args.join(' ')} in ${cwd}${libs ? ` with the bundled OpLens (${libs})` : ''}`);
    const child = spawn(interpreter.command, args, {
      cwd,
      env: { ...env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' },
      stdio: 'pipe',
      windowsHide: true,
    });
    this.child = child;
    this.childExit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stderr?.on('data', (data: Buffer) => {
      this.stderrTail = (this.stderrTail + data.toString('utf8')).slice(-STDERR_TAIL);
    });
    child.once('error', (e) => this.log.error(`server process: ${e.message}`));
    return child;
  }

  // ---- WebSocket --------------------------------------------------------------------------

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
    const stored = await this.context.secrets.get(TOKEN_SECRET);
    if (stored) {
      return { token: stored, source: 'the token stored with "OpLens: Set WebSocket Server Token…"' };
    }
    return { token: undefined, source: 'no token given: set one with "OpLens: Set WebSocket Server Token…" or oplens.server.tokenFile' };
  }

  private async websocketOptions(url: string): Promise<ServerOptions> {
    const { token, source } = await this.token();
    this.wsAuth = { token, source };
    return async () => {
      try {
        const transports = await connectWebSocket(url, token);
        this.log.info(`connected to ${url}`);
        return transports;
      } catch (e) {
        if (e instanceof WsConnectError) {
          this.failureReported = true;
          this.setState('failed');
          void this.notifier.show(describeWsFailure(url, e.failure, source), { restartServer: () => this.restart(0) });
          throw new ServerUnavailable(`cannot connect to ${url}`);
        }
        throw e;
      }
    };
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
      await this.context.secrets.store(TOKEN_SECRET, token.trim());
    } else {
      await this.context.secrets.delete(TOKEN_SECRET);
    }
    if (this.settings.value.server.url) {
      await this.restart(0);
    }
  }

  // ---- failures ---------------------------------------------------------------------------

  private async onClosed(): Promise<void> {
    if (this.stopping || this.failureReported) {
      return;
    }
    this.failureReported = true;
    const connection = this._connection;
    if (connection?.kind === 'websocket') {
      this.beginReconnect(connection.url);
      return;
    }
    this.setState('failed');
    const exit = await Promise.race([
      this.childExit ?? Promise.resolve({ code: null, signal: null }),
      new Promise<{ code: null; signal: null }>((resolve) => setTimeout(() => resolve({ code: null, signal: null }), 1500)),
    ]);
    void this.notifier.show(describeServerExit(exit.code, exit.signal, this.stderrTail, this.hints), { restartServer: () => this.restart(0) });
  }

  // ---- reconnecting ------------------------------------------------------------------------

  /** The WebSocket dropped: drop the old session and retry with backoff, with the token already given. */
  private beginReconnect(url: string): void {
    const old = this.client;
    this.client = undefined;
    if (old) {
      void Promise.resolve()
        .then(() => old.dispose(1000))
        .catch(() => undefined); // already stopped by the close
    }
    this.reconnector?.stop();
    const auth = this.wsAuth;
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
        this.setState('reconnecting', true);
        return;
      case 'failed':
        this.reconnector = undefined;
        this._stateDetail = state.failure.status === 401 ? 'the server refused the token (401)' : `refused: HTTP ${state.failure.status ?? state.failure.code}`;
        this.setState('failed');
        void this.notifier.show(describeWsFailure(url, state.failure, tokenSource), { restartServer: () => this.restart(0) });
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
    await this.starting?.catch(() => undefined);
    this.pendingTransports = transports;
    await this.start();
    if (this.isReady) {
      vscode.window.setStatusBarMessage(`$(plug) OpLens: reconnected to ${url}`, 5_000);
    }
  }

  /** The "Reconnect" button: try at once while reconnecting; otherwise start again. */
  async retryNow(): Promise<void> {
    if (this.reconnector?.active) {
      this.reconnector.retryNow();
      return;
    }
    if (!this.isReady) {
      await this.restart(0);
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
    this._stateDetail = 'stopped reconnecting: Restart Server connects again';
    this.log.info('stopped reconnecting');
    this.setState('stopped');
  }

  private async reportStartFailure(e: unknown): Promise<void> {
    if (e instanceof ServerUnavailable || this.failureReported) {
      return; // already explained (a refused WebSocket, or the close handler)
    }
    this.failureReported = true;
    const message = (e as Error).message ?? String(e);
    if (this._connection?.kind === 'stdio') {
      const exit = await Promise.race([
        this.childExit ?? Promise.resolve({ code: null, signal: null }),
        new Promise<{ code: null; signal: null }>((resolve) => setTimeout(() => resolve({ code: null, signal: null }), 1500)),
      ]);
      const problem = describeServerExit(exit.code, exit.signal, this.stderrTail || message, this.hints);
      void this.notifier.show(problem, { restartServer: () => this.restart(0) });
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
    const reconnector = this.reconnector;
    this.reconnector = undefined;
    reconnector?.stop();
    this.pendingTransports?.socket.terminate();
    this.pendingTransports = undefined;
    const client = this.client;
    const child = this.child;
    this.client = undefined;
    this.child = undefined;
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
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      child.once('exit', () => clearTimeout(timer));
    }
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
    const reconnector = this.reconnector;
    if (reconnector?.active && this._connection?.kind === 'websocket') {
      throw new ServerReconnecting(reconnectingMessage(this._connection.url, reconnector.state));
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
  }
}
