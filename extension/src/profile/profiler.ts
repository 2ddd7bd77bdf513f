/**
 * Profile Function: find the function at the cursor (or the lens's) among the functions the server
 * lists for the document, ask for its arguments when it needs some (prefilled from the argument
 * memory), save the file, ask the server to profile it, and show the result; a failure becomes a
 * message with what to do next.
 *
 * Profile Function in Program…: the same, but instead of arguments the user picks a program
 * (program/picker.ts: a launch configuration, a typed line, the oplens.program setting) and the
 * server runs it with the function captured (`oplens.profile` with `program`).
 *
 * Program Overview…: the same program picked, the function at the cursor as its step, and the
 * server profiles whole steps (`oplens.overview`): every user function's share, its lenses in every
 * file, the Hot Functions view. An overview's `▶ lines` lens is `oplens.profile` with the overview's
 * program: that function captured in the same program, no question asked.
 *
 * In a notebook cell, the function's arguments are the kernel's: Profile Function runs the `%oplens` magic
 * in the notebook's kernel (notebook/notebookProfiler.ts).
 *
 * While the server works, a notification with Cancel shows its progress (progress/notification.ts);
 * Cancel cancels that run on the server, and the request fails as cancelled (said as such).
 *
 * VS Code glue: imports `vscode`; its models are argMemory.ts and program/program.ts.
 */

import * as vscode from 'vscode';
import { OVERVIEW_COMMAND, PROFILE_COMMAND, SLURM_COMMAND } from '../../shared/names';
import { isOverview } from '../../shared/run';
import { enclosingFunction, topLevelFunctionNames, type DocFunction, type DocumentInfo } from '../documents/documentIndex';
import type { Documents } from '../documents/documents';
import { isCellUri } from '../notebook/notebookCall';
import type { NotebookProfiler } from '../notebook/notebookProfiler';
import type { ActionHandlers, Notifier } from '../problems/notify';
import { describeCaptureError, describeProfileError, type RpcError, type ServerLink } from '../problems/problems';
import { withRunProgress } from '../progress/notification';
import type { PickedProgram, ProgramPicker } from '../program/picker';
import { describeProgram, programForHost, programFromServer, type ProgramSpec } from '../program/program';
import { fetchRun } from '../runs/fromServer';
import { parseProfileResponse } from '../runs/parseRun';
import type { ResultsView } from '../runs/resultsView';
import type { RunStore } from '../runs/runStore';
import { ServerReconnecting, ServerUnavailable } from '../server/contract';
import type { OpLensServer } from '../server/server';
import { captureOptions, requestOptions } from '../settings/settings';
import { workspaceRoot } from '../settings/source';
import type { SettingsSource } from '../settings/source';
import { ArgumentMemory } from './argMemory';

export interface ProfileOptions {
  /** Always ask for arguments (Profile Function with Arguments…, Edit Arguments…). */
  askArgs?: boolean;
  /** Override oplens.backend for this profile (Profile on the CPU). */
  backend?: string;
  /** In a program: a program overview with the function as its step (`oplens.overview`), not its lines. */
  overview?: boolean;
}

export class Profiler {
  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly documents: Documents,
    private readonly memory: ArgumentMemory,
    private readonly notifier: Notifier,
    private readonly settings: SettingsSource,
    private readonly panel: ResultsView,
    private readonly programs: ProgramPicker,
    private readonly notebooks: NotebookProfiler,
  ) {}

  /** The commands: the function around the cursor of the active Python editor. */
  async profileAtCursor(options: ProfileOptions = {}): Promise<void> {
    const found = await this.functionAtCursor();
    if (found) {
      await this.profile(found.uri, found.fn.qualname, options, found.info);
    }
  }

  /** Profile Function in Program… from the editor: the function around the cursor. */
  async profileInProgramAtCursor(): Promise<void> {
    const found = await this.functionAtCursor();
    if (found) {
      await this.profileInProgram(found.uri, found.fn.qualname);
    }
  }

  /** Program Overview…: the program picked, the function around the cursor its step. */
  async overviewAtCursor(): Promise<string | undefined> {
    const found = await this.functionAtCursor();
    return found ? this.profileInProgram(found.uri, found.fn.qualname, { overview: true }) : undefined;
  }

  /** The function around the cursor of the active Python editor (asked for when the cursor is in none). */
  private async functionAtCursor(): Promise<{ uri: vscode.Uri; fn: DocFunction; info: DocumentInfo } | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
      void vscode.window.showInformationMessage('OpLens: open a Python file and put the cursor inside the function to profile.');
      return undefined;
    }
    const info = await this.documentInfo(editor.document, 'the function at the cursor');
    if (!info) {
      return undefined;
    }
    let fn = enclosingFunction(info.functions, editor.selection.active.line + 1);
    if (!fn) {
      fn = await pickFunction(info, 'The cursor is not inside a function: which one should OpLens profile?');
      if (!fn) {
        return undefined;
      }
    }
    return { uri: editor.document.uri, fn, info };
  }

  /** What the server lists for `doc` now; undefined (after telling the user) when it cannot say. */
  private async documentInfo(doc: vscode.TextDocument, what: string): Promise<DocumentInfo | undefined> {
    try {
      return await this.documents.info(doc);
    } catch (e) {
      await this.reportFailure(e, what, this.settings.value.backend);
      return undefined;
    }
  }

  /**
   * A click on the server's "▶ Profile" lens: `{uri, qualname}`; or on an overview's "▶ lines"
   * (a row's ▶ in Hot Functions, the results page's): `{uri, qualname, program}`, the function
   * captured in the overview's program.
   */
  async profileFromLens(arg: unknown): Promise<unknown> {
    const a = (arg ?? {}) as { uri?: unknown; qualname?: unknown; program?: unknown };
    if (typeof a.uri !== 'string' || typeof a.qualname !== 'string') {
      return undefined;
    }
    const uri = vscode.Uri.parse(a.uri);
    const spec = programFromServer(a.program);
    if (spec) {
      const folder = (vscode.workspace.getWorkspaceFolder(uri) ?? workspaceRoot())?.uri.fsPath ?? vscode.Uri.joinPath(uri, '..').fsPath;
      return this.profileInProgram(uri, a.qualname, {}, { spec, label: describeProgram(spec, folder), folder });
    }
    return this.profile(uri, a.qualname, {});
  }

  /** The command: from the "▶ Profile in Program…" lens (`{uri, qualname}`), else the function at the cursor. */
  async profileInProgramCommand(arg: unknown): Promise<unknown> {
    const a = (arg ?? {}) as { uri?: unknown; qualname?: unknown };
    if (typeof a.uri === 'string' && typeof a.qualname === 'string') {
      return this.profileInProgram(vscode.Uri.parse(a.uri), a.qualname);
    }
    return this.profileInProgramAtCursor();
  }

  /**
   * Capture `qualname` of `uri` inside a program the user picks (`picked`: already chosen); the
   * run id, or undefined when cancelled or failed. A run the program left partial is drawn (its
   * result came) and the error says why it is partial.
   */
  async profileInProgram(uri: vscode.Uri, qualname: string, options: ProfileOptions = {}, picked?: PickedProgram): Promise<string | undefined> {
    if (isCellUri(uri.toString())) {
      void vscode.window.showInformationMessage(`OpLens: ${qualname} is a notebook cell's: profile it in the notebook's kernel (Profile Function).`);
      return undefined;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    const program = picked ?? (await this.programs.pick(uri, qualname));
    if (!program) {
      return undefined;
    }
    // where the server's host submits Slurm jobs: on the host, or as a job of several nodes (a capture, not an overview)
    let sbatch: string[] | null = program.slurm ?? null;
    const slurm = picked || options.overview ? undefined : await this.slurmHere();
    if (slurm) {
      const where = await this.programs.where(qualname, slurm);
      if (where === undefined) {
        return undefined;
      }
      sbatch = where;
    }
    if (doc.isDirty) {
      await doc.save(); // the program imports the file from disk
    }
    const options_ = captureOptions(this.settings.value);
    const backend = options.backend ?? options_.backend;
    const spec: ProgramSpec = programForHost({ ...program.spec, cwd: program.spec.cwd ?? program.folder }, this.server.pathMap);
    const overview = options.overview === true;
    const label = sbatch ? `${program.label} as a Slurm job` : program.label;
    const what = overview ? `an overview of ${program.label} (steps of ${qualname})` : `${qualname} in ${label}`;
    // A program may run long before it calls the function: Cancel (send's notification) ends it,
    // and the request fails as cancelled. Not $/cancelRequest: the server answers it at once, but
    // the command keeps running.
    let failure: { error: unknown } | undefined;
    let partial: string | undefined; // a run the program left partial (it ended, failed or was cancelled mid-window)
    const watch = this.store.onDidChange((change) => {
      if (change.kind === 'added' && change.entry.run.capture?.partial && change.entry.run.target.qualname === qualname) {
        partial = change.entry.run.run_id;
      }
    });
    let runId: string | undefined;
    try {
      runId = await this.send(
        `${overview ? 'Profiling' : 'Capturing'} ${what} on ${backend.toUpperCase()}…`,
        `OpLens: ${overview ? 'profiling' : 'capturing'} ${what}`,
        { uri: uri.toString(), qualname, program: sbatch ? { ...spec, slurm: sbatch } : spec, ...options_, backend },
        (error) => {
          failure = { error }; // told below, with the partial run the program left
          return Promise.resolve();
        },
        (title) => (overview ? `$(check) OpLens ${title}` : `$(check) OpLens ${qualname} in ${label}: ${title}`),
        overview ? OVERVIEW_COMMAND : PROFILE_COMMAND,
      );
    } finally {
      watch.dispose();
    }
    if (failure) {
      if (partial && this.store.has(partial)) {
        await this.panel.showRun(partial, true); // what was captured before it ended; the message says why
      }
      if (failure.error instanceof ServerUnavailable) {
        await this.reportFailure(failure.error, qualname, backend);
      } else {
        await this.notifier.show(describeCaptureError(asRpcError(failure.error), qualname, program.label, backend, this.link()), {
          pickProgram: () => this.profileInProgram(uri, qualname, options),
          retryWithBackend: (b: string) => this.profileInProgram(uri, qualname, { ...options, backend: b }, { ...program, slurm: sbatch }),
        });
      }
      return undefined;
    }
    const capture = runId ? this.store.get(runId)?.run.capture : undefined;
    if (capture?.partial) {
      const why = capture.reason ? `: ${capture.reason}` : '';
      void vscode.window.showWarningMessage(
        `OpLens: ${qualname} was captured in ${capture.calls_profiled} call${capture.calls_profiled === 1 ? '' : 's'} only (a partial run)${why}.`,
      );
    }
    return runId;
  }

  /** The server host's sbatch where it submits Slurm jobs (`oplens.slurm`); undefined where not (or an older server). */
  private async slurmHere(): Promise<string | undefined> {
    if (!this.server.serverCommands?.includes(SLURM_COMMAND)) {
      return undefined;
    }
    try {
      const answer = (await this.server.execute(SLURM_COMMAND, {})) as { sbatch?: unknown } | null;
      return typeof answer?.sbatch === 'string' && answer.sbatch ? answer.sbatch : undefined;
    } catch {
      return undefined; // asking is a nicety: the capture runs on the host
    }
  }

  /** Profile `qualname` of `uri`; the run id, or undefined when cancelled or failed. `info`: the document's, when at hand. */
  async profile(uri: vscode.Uri, qualname: string, options: ProfileOptions, info?: DocumentInfo): Promise<string | undefined> {
    if (isCellUri(uri.toString())) {
      await this.notebooks.profile(uri, qualname); // its arguments are the kernel's: the magic runs there
      return undefined;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    info ??= await this.documentInfo(doc, qualname);
    if (!info) {
      return undefined;
    }
    const fn = info.functions.find((f) => f.qualname === qualname);
    const file = vscode.workspace.asRelativePath(uri, false);
    let args = this.memory.get(file, qualname) ?? '';
    if (options.askArgs || (fn !== undefined && fn.requiredParams > 0)) {
      const answer = await askArguments(this.memory, file, qualname, fn, topLevelFunctionNames(info.functions));
      if (answer === undefined) {
        return undefined;
      }
      args = answer;
      await this.memory.remember(file, qualname, args);
    }
    if (doc.isDirty) {
      await doc.save(); // the worker imports the file from disk: profile what the user sees
    }
    const options_ = requestOptions(this.settings.value);
    const backend = options.backend ?? options_.backend;
    return this.send(
      `Profiling ${qualname} on ${backend.toUpperCase()}…`,
      `OpLens: profiling ${qualname} on ${backend.toUpperCase()}`,
      { uri: uri.toString(), qualname, args, ...options_, backend },
      (e) =>
        this.reportFailure(e, qualname, backend, {
          editArguments: () => this.profile(uri, qualname, { ...options, askArgs: true }),
          retryWithBackend: (b: string) => this.profile(uri, qualname, { ...options, backend: b }),
        }),
      (title) => `$(check) OpLens ${qualname}: ${title}`,
    );
  }

  /**
   * `oplens.profile` with `request`, the status bar and the panel busy (`busy`) meanwhile and the
   * server's progress in a notification with Cancel (`title`); the run shown when it ends; the run
   * id, or undefined after `fail` (once the notification is gone).
   */
  private async send(
    busy: string,
    title: string,
    request: Record<string, unknown>,
    fail: (e: unknown) => Promise<void>,
    done: (title: string) => string,
    command: string = PROFILE_COMMAND,
  ): Promise<string | undefined> {
    const release = this.server.busy();
    this.panel.busy(busy);
    try {
      const answer = await withRunProgress(this.server, this.notifier, title, (hook) => this.server.execute(command, request, undefined, hook));
      const response = parseProfileResponse(answer);
      if (!this.store.has(response.run_id)) {
        await this.fetchRun(response.run_id); // the result notification normally came first
      }
      await this.panel.showRun(response.run_id, true);
      vscode.window.setStatusBarMessage(done(response.title), 10_000);
      return response.run_id;
    } catch (e) {
      this.panel.busy(null);
      release();
      await fail(e);
      return undefined;
    } finally {
      this.panel.busy(null);
      release();
    }
  }

  async reportFailure(e: unknown, what: string, backend: string, handlers: ActionHandlers = {}): Promise<void> {
    if (e instanceof ServerUnavailable) {
      await this.notifier.show({
        severity: 'error',
        message: `OpLens: cannot profile ${what}: the OpLens server is not running.`,
        actions: [
          { kind: 'restartServer', title: 'Restart Server' },
          { kind: 'showOutput', title: 'Show Output' },
        ],
      });
      return;
    }
    if (e instanceof ServerReconnecting) {
      await this.notifier.show({ severity: 'warning', message: `OpLens: ${what}: ${e.message}`, actions: [{ kind: 'showOutput', title: 'Show Output' }] });
      return;
    }
    await this.notifier.show(describeProfileError(asRpcError(e), what, backend, this.link()), handlers);
  }

  /** How the server is reached, for the advice on a lost connection. */
  private link(): ServerLink {
    return this.server.connection?.kind === 'websocket' ? 'websocket' : 'stdio';
  }

  /** Ask the server for a run it keeps (`oplens.showRun`); it also re-sends `oplens/result`. */
  fetchRun(runId: string): Promise<void> {
    return fetchRun(this.server, this.store, runId);
  }

  /** A click on the server's totals lens: `{run_id}`. */
  async showRunFromLens(arg: unknown): Promise<unknown> {
    const runId = (arg as { run_id?: unknown } | undefined)?.run_id;
    if (typeof runId !== 'string') {
      return undefined;
    }
    try {
      if (!this.store.has(runId)) {
        await this.fetchRun(runId);
      }
      await this.panel.showRun(runId, true);
    } catch (e) {
      await this.reportFailure(e, `run ${runId}`, this.settings.value.backend);
    }
    return undefined;
  }

  /** Profile a run's function again, with the arguments it was run with (a captured one: in a program, picked again). */
  async rerun(runId: string): Promise<void> {
    const entry = this.store.get(runId);
    if (!entry) {
      return;
    }
    const uri = vscode.Uri.parse(entry.uri);
    if (entry.run.capture) {
      await this.profileInProgram(uri, entry.run.target.qualname, { overview: isOverview(entry.run) });
      return;
    }
    const file = vscode.workspace.asRelativePath(uri, false);
    if (this.memory.get(file, entry.run.target.qualname) === undefined && entry.run.config.args) {
      await this.memory.remember(file, entry.run.target.qualname, entry.run.config.args);
    }
    await this.profile(uri, entry.run.target.qualname, {});
  }
}

function asRpcError(e: unknown): RpcError {
  const err = e as RpcError;
  return { code: err.code, message: String(err.message ?? e), data: err.data };
}

/** The argument expression for `qualname`, prefilled; undefined when the user cancels. */
export async function askArguments(
  memory: ArgumentMemory,
  file: string,
  qualname: string,
  fn: DocFunction | undefined,
  factories: string[],
  title?: string,
): Promise<string | undefined> {
  const suggestion = memory.suggest(file, qualname, factories);
  const example = fn?.inClass ? 'the instance first, e.g. Block(64), torch.randn(8, 64)' : 'e.g. torch.randn(4, 1024, 1024), torch.ones(1024)';
  const required = fn?.requiredParams ?? 0;
  return vscode.window.showInputBox({
    title: title ?? `OpLens: arguments for ${qualname}(${fn?.params ?? '…'})`,
    prompt: `The positional arguments as one Python expression, evaluated in the module with torch available (${example}). Remembered for next time.`,
    value: suggestion,
    valueSelection: [0, suggestion.length],
    placeHolder: fn ? `${required} positional argument${required === 1 ? '' : 's'}: ${fn.params}` : undefined,
    ignoreFocusOut: true,
    validateInput: (value) =>
      required > 0 && !value.trim()
        ? { message: `${qualname} takes ${required} positional argument${required === 1 ? '' : 's'} without a default`, severity: vscode.InputBoxValidationSeverity.Warning }
        : undefined,
  });
}

/** Let the user pick one of the document's functions. */
export async function pickFunction(info: DocumentInfo, placeHolder: string): Promise<DocFunction | undefined> {
  if (info.functions.length === 0) {
    const why = info.parseError ? `the file does not parse (${info.parseError}); fix it, then profile again.` : 'this file has no functions to profile.';
    void vscode.window.showInformationMessage(`OpLens: ${why}`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    info.functions.map((fn) => ({ label: fn.qualname, description: `(${fn.params})`, detail: `line ${fn.defLine}`, fn })),
    { placeHolder, matchOnDetail: true },
  );
  return picked?.fn;
}
