/**
 * Reconnecting to `oplens serve --ws` after the WebSocket dropped (the SSH tunnel went down, the
 * server restarted): the backoff schedule (1 s, 2 s, 4 s … capped at 30 s, a little jitter) and the
 * connection's state machine:
 *
 *   connected ──drop──▶ reconnecting(attempt 1, 1 s) ──fails──▶ reconnecting(attempt 2, 2 s) ─ …
 *        ▲                    │  (attempt n fails: n+1 after backoff(n+1); forever)
 *        └──── opens ─────────┤
 *                             ├── 401 / 403 (token rotated with --new-token, refused) ──▶ failed(failure)
 *                             └── stop() (the user, a restart, the setting changed) ───▶ stopped
 *
 * `retryNow()` (the "Reconnect" button) tries at once instead of waiting out the delay. The attempt
 * itself is injected (the server passes `connectWebSocket` with the token it already has), so the
 * machine runs, and is tested against a real `ws` server, without VS Code.
 *
 * Pure: imports no `vscode`; unit-tested in reconnect.test.ts.
 */

import type { WsFailure } from '../problems/problems';
import { WsConnectError } from './websocket';

export interface Backoff {
  /** The delay before the first attempt. */
  initialMs: number;
  /** No delay is longer than this (jitter included). */
  maxMs: number;
  /** Each attempt waits `factor` times longer than the one before. */
  factor: number;
  /** ± this share of the delay, at random (0.1: ±10 %). */
  jitter: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 1_000, maxMs: 30_000, factor: 2, jitter: 0.1 };

/** The delay before attempt `attempt` (1-based): initial·factor^(attempt−1), capped, ± jitter. */
export function backoffDelay(attempt: number, backoff: Backoff = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(attempt));
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** (n - 1));
  const jittered = base * (1 + backoff.jitter * (2 * random() - 1));
  return Math.round(Math.max(0, Math.min(backoff.maxMs, jittered)));
}

export type ConnectionState =
  | { kind: 'connected' }
  /** Attempt `attempt` runs in `nextDelayMs` (counted from when this state was entered). */
  | { kind: 'reconnecting'; attempt: number; nextDelayMs: number; lastFailure?: WsFailure }
  | { kind: 'stopped' }
  /** Refused in a way retrying cannot fix (a rotated token: 401). */
  | { kind: 'failed'; failure: WsFailure };

/** A refusal retrying cannot fix: the token (401) or a browser origin (403). Anything else (refused, reset, timed out, 502…) is retried. */
export function isFatalFailure(f: WsFailure): boolean {
  return f.status === 401 || f.status === 403;
}

/** What an attempt's rejection says: the `WsConnectError`'s failure, or the error's message. */
export function failureOf(e: unknown): WsFailure {
  if (e instanceof WsConnectError) {
    return e.failure;
  }
  const err = e as NodeJS.ErrnoException | undefined;
  return { code: typeof err?.code === 'string' ? err.code : undefined, message: err?.message ?? String(e) };
}

/** "2 s", "500 ms". */
export function formatDelay(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 1_000)} s`;
}

export interface ReconnectorOptions<T> {
  /** Open the connection; rejects (with `WsConnectError`) when it cannot. */
  attempt: () => Promise<T>;
  /** The connection opened: the reconnector is `connected` and done. */
  onConnected: (value: T) => void;
  /** Every state change (each new attempt is one). */
  onState?: (state: ConnectionState) => void;
  /** A connection that opened after `stop()`: close it. */
  discard?: (value: T) => void;
  backoff?: Backoff;
  random?: () => number;
}

/** Retries `attempt` with backoff until it opens, a fatal refusal, or `stop()`. One use: from `start()` to a final state. */
export class Reconnector<T> {
  private _state: ConnectionState = { kind: 'connected' };
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inFlight = false;
  private readonly backoff: Backoff;
  private readonly random: () => number;

  constructor(private readonly options: ReconnectorOptions<T>) {
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.random = options.random ?? Math.random;
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** Still trying (not connected, stopped or failed). */
  get active(): boolean {
    return this._state.kind === 'reconnecting';
  }

  /** The connection dropped: schedule attempt 1. */
  start(): void {
    if (this.active) {
      return;
    }
    this.schedule(1, undefined);
  }

  /** Try now instead of waiting out the delay (the "Reconnect" button); the attempt count goes on. */
  retryNow(): void {
    if (this._state.kind !== 'reconnecting' || this.inFlight) {
      return;
    }
    this.clearTimer();
    const { attempt, lastFailure } = this._state;
    this.set({ kind: 'reconnecting', attempt, nextDelayMs: 0, lastFailure });
    void this.run(attempt);
  }

  /** Give up (the user, a restart of the server, another setting). */
  stop(): void {
    if (this._state.kind === 'stopped') {
      return;
    }
    this.clearTimer();
    const wasActive = this.active;
    this._state = { kind: 'stopped' };
    if (wasActive) {
      this.options.onState?.(this._state);
    }
  }

  private schedule(attempt: number, lastFailure: WsFailure | undefined): void {
    const nextDelayMs = backoffDelay(attempt, this.backoff, this.random);
    this.set({ kind: 'reconnecting', attempt, nextDelayMs, lastFailure });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run(attempt);
    }, nextDelayMs);
  }

  private async run(attempt: number): Promise<void> {
    this.inFlight = true;
    let value: T;
    try {
      value = await this.options.attempt();
    } catch (e) {
      this.inFlight = false;
      if (!this.active) {
        return; // stopped meanwhile
      }
      const failure = failureOf(e);
      if (isFatalFailure(failure)) {
        this.set({ kind: 'failed', failure });
      } else {
        this.schedule(attempt + 1, failure);
      }
      return;
    }
    this.inFlight = false;
    if (!this.active) {
      this.options.discard?.(value);
      return;
    }
    this.set({ kind: 'connected' });
    this.options.onConnected(value);
  }

  private set(state: ConnectionState): void {
    this._state = state;
    this.options.onState?.(state);
  }

  private clearTimer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}

/** What a command issued while reconnecting is told (it is refused; nothing is queued). */
export function reconnectingMessage(url: string, state: ConnectionState | undefined): string {
  const where =
    state?.kind === 'reconnecting' ? ` (attempt ${state.attempt}${state.nextDelayMs > 0 ? `, next try in ${formatDelay(state.nextDelayMs)}` : ''})` : '';
  return `reconnecting to ${url} …${where}; the command did not run: run it again once connected (the status bar says so)`;
}
