/**
 * Every name OpLens's TypeScript side shares with someone else, defined once: with the Python
 * server (`server/oplens/records/names.py` and the backend registry, `backends/registry.py`) under
 * the same identifiers as there, and with the manifest (`package.json`). The rest of the
 * extension and the webviews import these instead of writing the strings.
 *
 * `extension/shared/names.test.ts` checks this file against `extension/test/fixtures/names.json`,
 * which `make_fixtures.py` writes from the Python modules (and `tests/unit/test_extension_fixtures.py`
 * fails when that file drifts from them), and against package.json.
 */

// ---- shared with the server: oplens.records.names --------------------------------------------

/** OpLens's own LSP protocol; the server announces it as `serverInfo.version` `<version>+protocol.<N>`. */
export const PROTOCOL_VERSION = 3;

// workspace/executeCommand
export const PROFILE_COMMAND = 'oplens.profile';
export const COMPARE_COMMAND = 'oplens.compare';
export const SHOW_RUN_COMMAND = 'oplens.showRun';
export const CLEAR_COMMAND = 'oplens.clear';
export const CANCEL_COMMAND = 'oplens.cancel';
export const FUNCTIONS_COMMAND = 'oplens.functions';
export const DIFF_COMMAND = 'oplens.diff';
export const DOCTOR_COMMAND = 'oplens.doctor';
export const MERGE_COMMAND = 'oplens.merge';
export const RANK_PART_COMMAND = 'oplens.rankPart';
export const OVERVIEW_COMMAND = 'oplens.overview';
export const HOT_FUNCTIONS_COMMAND = 'oplens.hotFunctions';
export const OPEN_PERFETTO_COMMAND = 'oplens.openPerfetto'; // {run_id}: the one-shot page that opens the run in Perfetto UI: {url}
export const EXPORT_COMMAND = 'oplens.export'; // {run_id, format}: the run written for Perfetto, speedscope or TensorBoard/HTA
export const FLAME_GRAPH_COMMAND = 'oplens.flameGraph'; // {run_id}: the run's stacks as a speedscope profile for the editor's flame graph
export const SLURM_COMMAND = 'oplens.slurm'; // whether the server's host submits Slurm jobs (sbatch on its PATH): {sbatch, note}
export const BACKENDS_COMMAND = 'oplens.backends';
export const RUN_PAGE_COMMAND = 'oplens.runPage';

// server → client notifications
/** The qualname of a `%%oplens` cell's run: the notebook cell itself, profiled as one function. */
export const CELL_QUALNAME = '<cell>';
export const RESULT_NOTIFICATION = 'oplens/result';
export const DOCUMENT_NOTIFICATION = 'oplens/document';

/** Progress stages of a profile (a capture in a program: waiting and capture instead of warmup and profile; ingesting: the device runtime's trace read), in order. */
export const STAGES = ['queued', 'importing', 'waiting', 'warmup', 'capture', 'profile', 'ingesting', 'processing'] as const;
export type Stage = (typeof STAGES)[number];

/** The profiler ranges OpLens opens in a trace: `oplens.iter:<i>`, `oplens.line:<n>`, `oplens.inner:<fn>:<n>`. */
export const ITER_RANGE = 'oplens.iter:';
export const WORK_RANGE = 'oplens.work:'; // oplens.work:<digest>, in an iteration: its arguments' shapes (a capture's calls)
export const MARKER = 'oplens.'; // the prefix of every profiler range OpLens opens
export const LINE_RANGE = 'oplens.line:';
export const INNER_RANGE = 'oplens.inner:';
export const MODULE_RANGE = 'oplens.module:'; // oplens.module:<path>, one per nn.Module call in a program overview
export const FRAME_RANGE = 'oplens.frame:'; // oplens.frame:<file>(<def line>): <name>, one per user function call (overview)
export const PROBE_RANGE = 'oplens.probe:'; // oplens.probe:<n>, a probe of empty lines marked after each recorded call: what a mark costs

// ---- shared with the server: oplens.backends.registry ----------------------------------------

/** What `oplens.backend` may be (`registry.NAMES`): `auto`, then every backend. */
export const BACKENDS = ['auto', 'cpu', 'cuda', 'neuron'] as const;
export type Backend = (typeof BACKENDS)[number];

/** Neuron's extra command (`backends/neuron/commands.py`): ingest a run and open Neuron Explorer. */
export const OPEN_EXPLORER_COMMAND = 'oplens.openExplorer';

/** Every backend's extra commands (`registry.commands()`), as the server registers them. */
export const BACKEND_COMMANDS = [{ backend: 'neuron', name: 'explorer', lspCommand: OPEN_EXPLORER_COMMAND, settingsKey: 'explorer' }] as const;

/** Every command the server registers: a manifest command of the same name would collide. */
export const SERVER_COMMANDS: readonly string[] = [
  PROFILE_COMMAND,
  COMPARE_COMMAND,
  SHOW_RUN_COMMAND,
  CLEAR_COMMAND,
  CANCEL_COMMAND,
  FUNCTIONS_COMMAND,
  DIFF_COMMAND,
  DOCTOR_COMMAND,
  MERGE_COMMAND,
  RANK_PART_COMMAND,
  OVERVIEW_COMMAND,
  HOT_FUNCTIONS_COMMAND,
  BACKENDS_COMMAND,
  SLURM_COMMAND,
  EXPORT_COMMAND,
  FLAME_GRAPH_COMMAND,
  OPEN_PERFETTO_COMMAND,
  RUN_PAGE_COMMAND,
  ...BACKEND_COMMANDS.map((c) => c.lspCommand),
];

// ---- shared with the manifest: package.json ------------------------------------------------

/** The commands package.json contributes (`contributes.commands`), by what they do. */
export const EXTENSION_COMMANDS = {
  profileFunction: 'oplens.profileFunction',
  profileFunctionWithArguments: 'oplens.profileFunctionWithArguments',
  profileInProgram: 'oplens.profileInProgram',
  compareFunctions: 'oplens.compareFunctions',
  showResults: 'oplens.showResults',
  openInExplorer: 'oplens.openInExplorer',
  openTrace: 'oplens.openTrace',
  showFlameGraph: 'oplens.showFlameGraph',
  clearAnnotations: 'oplens.clearAnnotations',
  restartServer: 'oplens.restartServer',
  showOutput: 'oplens.showOutput',
  setServerToken: 'oplens.setServerToken',
  checkSetup: 'oplens.checkSetup',
  installInEnvironment: 'oplens.installInEnvironment',
  openExample: 'oplens.openExample',
  selectInterpreter: 'oplens.selectInterpreter',
  mergeRuns: 'oplens.mergeRuns',
  cancelRun: 'oplens.cancelRun',
  chooseBackend: 'oplens.chooseBackend',
  programOverview: 'oplens.programOverview',
  sortHotFunctions: 'oplens.sortHotFunctions',
  refreshHotFunctions: 'oplens.refreshHotFunctions',
  profileHotFunctionLines: 'oplens.profileHotFunctionLines',
} as const;
export type ExtensionCommand = keyof typeof EXTENSION_COMMANDS;

/** The status item's menu: registered, not contributed (it has no place in the palette). */
export const STATUS_MENU_COMMAND = 'oplens.statusMenu';

/** Webview panel types; the results panel's is also an activation event (`onWebviewPanel:`). */
export const RESULTS_VIEW_TYPE = 'oplens.results';
export const FLAME_GRAPH_VIEW_TYPE = 'oplens.flameGraph';
export const TRACE_VIEW_TYPE = 'oplens.trace';

/** The Explorer's "Hot functions" tree view (the latest program overview's functions). */
export const HOT_FUNCTIONS_VIEW = 'oplens.hotFunctions.view';

/** The settings' section (`oplens.backend`, ...). */
export const SETTINGS_SECTION = 'oplens';
