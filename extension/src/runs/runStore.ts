/**
 * The runs this editor has seen (from `oplens/result` notifications and `oplens.showRun`), by id,
 * and the latest run of each function of each document: what the heat gutter and the results
 * panel draw from. Listeners hear of every change.
 *
 * Pure: imports no `vscode`; unit-tested in runStore.test.ts.
 */

import { isOverview, type AnyRun, type Run } from '../../shared/run';

export interface StoredRun<R extends AnyRun = AnyRun> {
  /** The document as this editor names it (the server already applied path mappings). */
  uri: string;
  /** A function's run, or a program overview (`isOverview`). */
  run: R;
}

/** `entry`, where it holds a function's run (not a program overview). */
export function ofLines(entry: StoredRun | undefined): StoredRun<Run> | undefined {
  return entry && !isOverview(entry.run) ? { uri: entry.uri, run: entry.run } : undefined;
}

export type StoreChange = { kind: 'added'; entry: StoredRun } | { kind: 'cleared'; uri?: string };

export class RunStore {
  private readonly byId = new Map<string, StoredRun>();
  /** uri → qualname → run id of the latest run */
  private readonly latest = new Map<string, Map<string, string>>();
  private readonly listeners = new Set<(change: StoreChange) => void>();
  /** Bounded, so that a long session that profiles thousands of times keeps little. */
  constructor(private readonly limit = 200) {}

  onDidChange(listener: (change: StoreChange) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private fire(change: StoreChange): void {
    for (const l of [...this.listeners]) {
      l(change);
    }
  }

  add(uri: string, run: AnyRun): StoredRun {
    const entry = { uri, run };
    const id = run.run_id || `${uri}::${run.target.qualname}::${run.created}`;
    this.byId.delete(id); // re-adding moves it to the newest end
    this.byId.set(id, entry);
    // a program overview is not a run of its step function's lines: it does not take that run's place
    if (!isOverview(run)) {
      const functions = this.latest.get(uri) ?? new Map<string, string>();
      const current = functions.get(run.target.qualname);
      const currentRun = current ? this.byId.get(current)?.run : undefined;
      // an older run fetched later (showRun of a past run) does not replace the newest one
      if (!currentRun || currentRun.created <= run.created || current === id) {
        functions.set(run.target.qualname, id);
      }
      this.latest.set(uri, functions);
    }
    this.evict();
    this.fire({ kind: 'added', entry });
    return entry;
  }

  private evict(): void {
    const pinned = new Set<string>();
    for (const functions of this.latest.values()) {
      for (const id of functions.values()) {
        pinned.add(id);
      }
    }
    for (const id of this.byId.keys()) {
      if (this.byId.size <= this.limit) {
        break;
      }
      if (!pinned.has(id)) {
        this.byId.delete(id);
      }
    }
  }

  get(runId: string): StoredRun | undefined {
    return this.byId.get(runId);
  }

  has(runId: string): boolean {
    return this.byId.has(runId);
  }

  /** The latest run of each function of `uri` (never an overview: it has no lines there). */
  forUri(uri: string): StoredRun<Run>[] {
    const functions = this.latest.get(uri);
    if (!functions) {
      return [];
    }
    return [...functions.values()].map((id) => ofLines(this.byId.get(id))).filter((e): e is StoredRun<Run> => e !== undefined);
  }

  latestFor(uri: string, qualname: string): StoredRun<Run> | undefined {
    const id = this.latest.get(uri)?.get(qualname);
    return id ? ofLines(this.byId.get(id)) : undefined;
  }

  /** Every run held, oldest first. */
  all(): StoredRun[] {
    return [...this.byId.values()];
  }

  /** The most recently added run, optionally only those matching `keep`. */
  newest(keep: (e: StoredRun) => boolean = () => true): StoredRun | undefined {
    const all = [...this.byId.values()];
    for (let i = all.length - 1; i >= 0; i--) {
      const e = all[i];
      if (e && keep(e)) {
        return e;
      }
    }
    return undefined;
  }

  /** Forget what is drawn for `uri` (or everything); runs stay on disk and on the server. */
  clear(uri?: string): void {
    if (uri === undefined) {
      this.latest.clear();
    } else {
      this.latest.delete(uri);
    }
    this.fire({ kind: 'cleared', uri });
  }

  get uris(): string[] {
    return [...this.latest.keys()];
  }
}
