/**
 * The results page as the commands that fill it see it: profile/, compare/ and ranks/ show a run or
 * a comparison there and a banner while they work; trace/ asks which run it shows and jumps to a
 * line. `ResultsPanel` (results/panel.ts) satisfies it structurally and extension.ts hands it in, so
 * those folders never import the panel that itself imports theirs (ranks/, diff/, overview/).
 *
 * Pure: imports no `vscode`.
 */

import type { CompareView } from '../../shared/messages';
import type { StoredRun } from './runStore';

export interface ResultsView {
  /** Show run `runId` (it must be in the store), or rank `rank`'s part of it; `reveal` brings the page forward. */
  showRun(runId: string, reveal: boolean, rank?: number | null): Promise<void>;
  showCompare(view: CompareView): void;
  /** A command is running (`message`) or no longer (`null`): a banner on the page, if open. */
  busy(message: string | null): void;
  /** The run shown, if it is one. */
  readonly currentRunId: string | undefined;
  /** A run the page knows by id: one in the store, or a rank's part it shows. */
  lookup(runId: string): StoredRun | undefined;
  /** Jump to profiled line `line` of the run's function, where it is now. */
  revealLine(runId: string, line: number): Promise<void>;
}
