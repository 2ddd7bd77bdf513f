/**
 * Profile Function: find the function at the cursor (or the lens's) among the functions the server
 * lists for the document, ask for its arguments when it needs some (prefilled from the argument
 * memory), save the file, ask the server to profile it, and show the result; a failure becomes a
 * message with what to do next.
 */

import * as vscode from 'vscode';
import { PROFILE_COMMAND, SHOW_RUN_COMMAND } from '../shared/names';
import type { SettingsSource } from './config';
import { ArgumentMemory } from './core/argMemory';
import { enclosingFunction, topLevelFunctionNames, type DocFunction, type DocumentInfo } from './core/documentIndex';
import { parseProfileResponse, parseRun } from './core/parseRun';
import { describeProfileError, type RpcError } from './core/problems';
import type { RunStore } from './core/runStore';
import { requestOptions } from './core/settings';
import type { Documents } from './documents';
import type { Notifier } from './notify';
import type { ResultsPanel } from './resultsPanel';
import { ServerUnavailable, type OpLensServer } from './server';

export interface ProfileOptions {
  /** Always ask for arguments (Profile Function with Arguments…, Edit Arguments…). */
  askArgs?: boolean;
  /** Override oplens.backend for this profile (Profile on the CPU). */
  backend?: string;
}

export class Profiler {
  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly documents: Documents,
    private readonly memory: ArgumentMemory,
    private readonly notifier: Notifier,
    private readonly settings: SettingsSource,
    private readonly panel: ResultsPanel,
  ) {}

  /** The commands: the function around the cursor of the active Python editor. */
  async profileAtCursor(options: ProfileOptions = {}): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== 'python') {
      void vscode.window.showInformationMessage('OpLens: open a Python file and put the cursor inside the function to profile.');
      return;
    }
    const info = await this.documentInfo(editor.document, 'the function at the cursor');
    if (!info) {
      return;
    }
    let fn = enclosingFunction(info.functions, editor.selection.active.line + 1);
    if (!fn) {
      fn = await pickFunction(info, 'The cursor is not inside a function: which one should OpLens profile?');
      if (!fn) {
        return;
      }
    }
    await this.profile(editor.document.uri, fn.qualname, options, info);
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

  /** A click on the server's "▶ Profile" lens: `{uri, qualname}`. */
  async profileFromLens(arg: unknown): Promise<unknown> {
    const a = (arg ?? {}) as { uri?: unknown; qualname?: unknown };
    if (typeof a.uri !== 'string' || typeof a.qualname !== 'string') {
      return undefined;
    }
    return this.profile(vscode.Uri.parse(a.uri), a.qualname, {});
  }

  /** Profile `qualname` of `uri`; the run id, or undefined when cancelled or failed. `info`: the document's, when at hand. */
  async profile(uri: vscode.Uri, qualname: string, options: ProfileOptions, info?: DocumentInfo): Promise<string | undefined> {
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
    const release = this.server.busy();
    this.panel.busy(`Profiling ${qualname} on ${backend.toUpperCase()}…`);
    try {
      const response = parseProfileResponse(
        await this.server.execute(PROFILE_COMMAND, { uri: uri.toString(), qualname, args, ...options_, backend }),
      );
      if (!this.store.has(response.run_id)) {
        await this.fetchRun(response.run_id); // the result notification normally came first
      }
      await this.panel.showRun(response.run_id, true);
      vscode.window.setStatusBarMessage(`$(check) OpLens ${qualname}: ${response.title}`, 10_000);
      return response.run_id;
    } catch (e) {
      this.panel.busy(null);
      release();
      await this.reportFailure(e, qualname, backend, {
        editArguments: () => this.profile(uri, qualname, { ...options, askArgs: true }),
        retryWithBackend: (b: string) => this.profile(uri, qualname, { ...options, backend: b }),
      });
      return undefined;
    } finally {
      this.panel.busy(null);
      release();
    }
  }

  async reportFailure(
    e: unknown,
    what: string,
    backend: string,
    handlers: { editArguments?: () => unknown; retryWithBackend?: (b: string) => unknown } = {},
  ): Promise<void> {
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
    const err = e as RpcError;
    await this.notifier.show(describeProfileError({ code: err.code, message: String(err.message ?? e), data: err.data }, what, backend), handlers);
  }

  /** Ask the server for a run it keeps (`oplens.showRun`); it also re-sends `oplens/result`. */
  async fetchRun(runId: string): Promise<void> {
    const answer = (await this.server.execute(SHOW_RUN_COMMAND, { run_id: runId })) as { uri?: unknown; run?: unknown } | null;
    if (answer && typeof answer.uri === 'string') {
      this.store.add(vscode.Uri.parse(answer.uri).toString(), parseRun(answer.run));
    }
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

  /** Profile a run's function again, with the arguments it was run with. */
  async rerun(runId: string): Promise<void> {
    const entry = this.store.get(runId);
    if (!entry) {
      return;
    }
    const uri = vscode.Uri.parse(entry.uri);
    const file = vscode.workspace.asRelativePath(uri, false);
    if (this.memory.get(file, entry.run.target.qualname) === undefined && entry.run.config.args) {
      await this.memory.remember(file, entry.run.target.qualname, entry.run.config.args);
    }
    await this.profile(uri, entry.run.target.qualname, {});
  }
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
