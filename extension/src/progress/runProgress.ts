/**
 * A run's progress as the extension shows it: a notification with Cancel (not the language client's
 * status-bar progress, which has no Cancel while a first Neuron compile takes minutes). The request
 * carries a `workDoneToken` of the extension's own (LSP client-initiated progress), so the server
 * reports to it instead of asking for a token; its `$/progress` values become the notification's
 * message (the server's words: `importing`, `warm-up: the first call (compiling, …)`, `iteration
 * 3/20`, `rmsnorm_fused (2 of 3): attributing`, …) and its percentage the bar's increments; Cancel
 * becomes `window/workDoneProgress/cancel` with that token, which cancels that run only (the worker
 * stops, nothing is stored). "Cancel OpLens Run" is `oplens.cancel`: every run of this window.
 *
 * Pure: imports no `vscode`; unit-tested in runProgress.test.ts.
 */

import { randomUUID } from 'node:crypto';
import type { WorkDoneHook } from '../server/contract';

/** What a notification's `progress.report` takes. */
export interface ProgressStep {
  message?: string;
  /** Percent of the bar to add (VS Code adds increments; the server sends totals). */
  increment?: number;
}


/** A fresh token for one request: unique across windows and restarts. */
export function newProgressToken(): string {
  return `oplens-${randomUUID()}`;
}

/**
 * A `$/progress` value (WorkDoneProgressBegin, Report or End) as the next step of a notification
 * whose bar stands at `reported` percent: the server's message, and how far the bar moves (never
 * back, never past 100). `end` and anything unreadable: undefined (the notification closes with
 * the request).
 */
export function progressStep(value: unknown, reported: number): ProgressStep | undefined {
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const v = value as { kind?: unknown; message?: unknown; percentage?: unknown };
  if (v.kind !== 'begin' && v.kind !== 'report') {
    return undefined;
  }
  const step: ProgressStep = {};
  if (typeof v.message === 'string' && v.message) {
    step.message = v.message;
  }
  if (typeof v.percentage === 'number' && Number.isFinite(v.percentage)) {
    const delta = Math.min(100, Math.max(0, v.percentage)) - reported;
    if (delta > 0) {
      step.increment = delta;
    }
  }
  return step.message !== undefined || step.increment !== undefined ? step : undefined;
}

/**
 * One request's progress: its token, each `$/progress` value drawn through `report`, and Cancel
 * sent once through `cancelOnServer(token)` (`window/workDoneProgress/cancel`).
 */
export class RunProgress implements WorkDoneHook {
  private reported = 0;
  private cancelling: Promise<void> | undefined;

  constructor(
    private readonly report: (step: ProgressStep) => void,
    private readonly cancelOnServer: (token: string) => Promise<void>,
    readonly workDoneToken: string = newProgressToken(),
  ) {}

  onProgress(value: unknown): void {
    const step = progressStep(value, this.reported);
    if (step) {
      this.reported += step.increment ?? 0;
      this.report(step);
    }
  }

  /** The user's Cancel: the server's cancel of this run, asked once however often it is clicked. */
  cancel(): Promise<void> {
    this.cancelling ??= this.cancelOnServer(this.workDoneToken);
    return this.cancelling;
  }

  get cancelled(): boolean {
    return this.cancelling !== undefined;
  }
}
