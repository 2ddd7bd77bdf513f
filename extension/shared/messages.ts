/**
 * Every message between the extension host and its webviews, as typed unions. Both sides import
 * this file (the extension bundle and the browser bundles), so a message that one side sends and
 * the other does not understand is a compile error, not a silent no-op.
 */

import type { ComparePage, DiffView, RunPage } from './generated/views';
import type { HotFunctions } from './overview';
import type { OverviewRun, Run } from './run';

// ---- the results panel ----------------------------------------------------------------------

/** What the results panel shows for one run. */
export interface RunView {
  /** The run, each line's ops cut to its top few (src/results/runView.ts): the bars', sorting's and chart's numbers. */
  run: Run;
  /**
   * The server's page of the run (`oplens.runPage`, `oplens.views.run`): every figure, cell and sentence
   * written; absent where the server could not answer (`pageProblem`).
   */
  page?: RunPage;
  pageProblem?: string;
  /** The profiled file as this editor names it (after path mappings). */
  uri: string;
  /** The file relative to the workspace, for the header. */
  fileLabel: string;
  /** Current text of the run's lines, by profiled line number (for the bar chart's labels). */
  source: Record<number, string>;
  /** The function changed since it was profiled: line jumps are approximate. */
  stale: boolean;
  actions: {
    /** A Neuron device profile exists (Open in Neuron Explorer). */
    explorer: boolean;
    /** A framework trace.json exists (Open trace). */
    trace: boolean;
  };
  /** A distributed run: which rank is on show (the page's rank selector, its words the page's `ranks`); absent for a single process. */
  ranks?: RankOnShow;
}

/** What the results panel shows for a program overview (an `OverviewRun`, not a function's lines). */
export interface OverviewRunView {
  run: OverviewRun;
  /** Its functions as the server lists them (their files as this editor names them), with its page. */
  overview: OverviewPage;
}

/** The results page of a program overview: the functions table and the icicle chart of its call tree. */
export interface OverviewPage {
  /** The server's `oplens.hotFunctions` answer for this run; null where it could not say (`problem`). */
  hot: HotFunctions | null;
  problem?: string;
}

/** Which of a distributed run's ranks is on show. */
export interface RankOnShow {
  /** The merged run ("All ranks"): what the page saves, diffs and asks ranks of. */
  runId: string;
  /** The rank whose own run (its part) is on show; null: all ranks (the merged run). */
  shown: number | null;
  /** Why the rank asked for is not shown (its part could not be read): the merged run is. */
  problem?: string;
}

/** What the results panel shows for a comparison. */
export interface CompareView {
  /** The server's page of the comparison (`oplens.views.compare`): every figure and word written. */
  page: ComparePage;
  /** The file of each variant, by run id, for the header. */
  files: Record<string, string>;
  /** Failed variants, with the reason (the others are still compared). */
  failed: { variant: string; message: string }[];
}

/** What the results page keeps across reloads (VS Code hands it back to the panel serializer). */
export interface ResultsPageState {
  opSort: { key: 'name' | 'calls' | 'self_cpu_us' | 'self_device_us' | 'pct'; desc: boolean };
  lineOrder: 'source' | 'time';
  filter: string;
  /** The run on show, restored after a window reload. */
  runId?: string;
  /** The run's own figures, or its diff against an earlier run. */
  tab?: 'run' | 'diff';
  /** A distributed run: the rank on show (null or absent: all ranks). */
  rank?: number | null;
}

export type ToResultsPanel =
  | { type: 'run'; view: RunView }
  | { type: 'overview'; view: OverviewRunView }
  | { type: 'compare'; view: CompareView }
  /** The server's "vs previous run" view of the shown run (`oplens.views.diff`). */
  | { type: 'diff'; runId: string; view: DiffView }
  | { type: 'noDiff'; runId: string; message: string }
  | { type: 'empty'; message: string }
  | { type: 'busy'; message: string | null };

export type FromResultsPanel =
  | { type: 'ready' }
  | { type: 'revealLine'; runId: string; line: number }
  | { type: 'showRun'; runId: string }
  /** A distributed run's rank selector: rank `rank`'s own run, or all ranks (null). */
  | { type: 'showRank'; runId: string; rank: number | null }
  /** The shown run against `before` (default: the previous run), of each line's self device time or (`by` 'wall') its wall time. */
  | { type: 'diff'; after: string; before?: string; by?: string }
  | { type: 'openExplorer'; runId: string }
  | { type: 'openTrace'; runId: string }
  | { type: 'export'; runId: string }
  | { type: 'openPerfetto'; runId: string }
  | { type: 'flameGraph'; runId: string }
  | { type: 'openArtifact'; runId: string; path: string }
  | { type: 'compareWith'; runId: string }
  | { type: 'rerun'; runId: string }
  /** A program overview's function (its file as the editor names it, its `def` line, 1-based): go there. */
  | { type: 'revealFunction'; uri: string; line: number }
  /** A program overview's `▶ lines`: `oplens.profile`'s argument (the function in the overview's program). */
  | { type: 'profileLines'; lines: Record<string, unknown> };

// ---- the trace viewer -------------------------------------------------------------------------

/**
 * A trace.json laid out for drawing: complete events as parallel arrays (compact to post and
 * fast to scan), one lane per process/thread, `depth` the nesting level inside its lane.
 * Times are µs from the first event.
 */
export interface TraceModel {
  title: string;
  lanes: { name: string; depth: number }[];
  names: string[];
  categories: string[];
  lane: number[];
  depth: number[];
  start: number[];
  dur: number[];
  name: number[];
  category: number[];
  /** Total span in µs. */
  span: number;
  /** Events dropped beyond the viewer's limit (the file is then only partly shown). */
  dropped: number;
}

export type ToTraceViewer = { type: 'trace'; model: TraceModel } | { type: 'error'; message: string };

export type FromTraceViewer = { type: 'ready' } | { type: 'revealLine'; line: number };

// ---- the flame graph (speedscope in a webview) -----------------------------------------------

/** The run's stacks for the bundled speedscope: the file's text, its name, and the server's words for the page (an
 * answer that failed is said by the extension before any page opens). */
export type ToFlameGraph = { type: 'profile'; fileName: string; text: string; hint: string };

/** `ready`: speedscope can take a file; `openLine`: a frame's file and line (1-based) clicked; `failed`: speedscope said it could not read the file. */
export type FromFlameGraph = { type: 'ready' } | { type: 'openLine'; file: string; line: number } | { type: 'failed'; message: string };
