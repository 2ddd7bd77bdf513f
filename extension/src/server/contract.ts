/**
 * What the rest of the extension sees of the server besides `OpLensServer` itself: its states, the
 * reconnect figures the status bar shows, the progress hook `execute` takes, and the two errors a
 * request can meet. They are the server's, so they live here and the status bar (status/) and the
 * run notification (progress/) import them, not the other way round.
 *
 * Pure: imports no `vscode`.
 */

export type ServerState = 'stopped' | 'starting' | 'ready' | 'busy' | 'reconnecting' | 'failed';

/** The reconnect machine's figures (reconnect.ts) while the state is `reconnecting`. */
export interface ReconnectInfo {
  attempt: number;
  nextDelayMs: number;
  /** Why the last attempt failed: `ECONNREFUSED`, … */
  lastFailure?: string;
}

/** What `OpLensServer.execute` takes to send the request with a token and hand its `$/progress` values back. */
export interface WorkDoneHook {
  workDoneToken: string;
  onProgress(value: unknown): void;
}

/** The server is not there: a message for the user, and whether a restart might help. */
export class ServerUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerUnavailable';
  }
}

/**
 * The WebSocket dropped and is being retried: the request was not sent. Not a `ServerUnavailable`
 * (whose callers say "not running"): its message is the one to show.
 */
export class ServerReconnecting extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerReconnecting';
  }
}
