/**
 * Compare Functions…: pick two or more functions (of the open Python files, as the server lists
 * them), give their shared arguments once, profile them one after another with identical settings,
 * and show the side-by-side summary with speed-ups against the first (the baseline), as in the case
 * study. Meanwhile a notification with Cancel shows the server's progress (each function's stages
 * after its name); Cancel stops the comparison on the server.
 *
 * VS Code glue: imports `vscode`; the page is the server's (`oplens.views.compare`), read by
 * `parseComparePage` (compareAnswer.ts).
 */

import * as vscode from 'vscode';
import { COMPARE_COMMAND } from '../../shared/names';
import { enclosingFunction, topLevelFunctionNames, type DocFunction } from '../documents/documentIndex';
import type { Documents } from '../documents/documents';
import type { Notifier } from '../problems/notify';
import type { ArgumentMemory } from '../profile/argMemory';
import { askArguments, type Profiler } from '../profile/profiler';
import { withRunProgress } from '../progress/notification';
import type { ResultsView } from '../runs/resultsView';
import type { RunStore } from '../runs/runStore';
import type { OpLensServer } from '../server/server';
import { requestOptions } from '../settings/settings';
import type { SettingsSource } from '../settings/source';
import { parseComparePage } from './compareAnswer';

interface Candidate {
  uri: vscode.Uri;
  file: string;
  fn: DocFunction;
  functions: DocFunction[];
}

interface CandidateItem extends vscode.QuickPickItem {
  candidate?: Candidate;
}

export class Comparer {
  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly documents: Documents,
    private readonly memory: ArgumentMemory,
    private readonly settings: SettingsSource,
    private readonly panel: ResultsView,
    private readonly profiler: Profiler,
    private readonly notifier: Notifier,
  ) {}

  /** `baseline`: the function to compare the others with (Compare with… in the panel). */
  async compareFunctions(baseline?: { uri: string; qualname: string }): Promise<void> {
    let candidates: Candidate[];
    try {
      candidates = await this.candidates(baseline?.uri);
    } catch (e) {
      await this.profiler.reportFailure(e, 'the comparison', this.settings.value.backend);
      return;
    }
    if (candidates.length < 2) {
      void vscode.window.showInformationMessage('OpLens: open a Python file with two or more functions to compare.');
      return;
    }
    const editor = vscode.window.activeTextEditor;
    const atCursor = baseline ?? (editor ? this.functionAtCursor(editor, candidates) : undefined);
    const isFirst = (c: Candidate): boolean => atCursor !== undefined && c.uri.toString() === atCursor.uri && c.fn.qualname === atCursor.qualname;

    const items: CandidateItem[] = [];
    let lastFile = '';
    for (const c of [...candidates.filter(isFirst), ...candidates.filter((c) => !isFirst(c))]) {
      if (c.file !== lastFile) {
        items.push({ label: c.file, kind: vscode.QuickPickItemKind.Separator });
        lastFile = c.file;
      }
      // the description starts with a bracket, not a word: a label reads as a whole word beside it
      items.push({
        label: c.fn.qualname,
        description: `(${c.fn.params})${isFirst(c) ? ' · baseline' : ''}`,
        detail: `line ${c.fn.defLine}`,
        picked: isFirst(c),
        candidate: c,
      });
    }
    const picked = await vscode.window.showQuickPick(items, {
      canPickMany: true,
      title: 'OpLens: Compare Functions',
      placeHolder: 'Pick two or more functions; the first one listed is the baseline for the speed-ups',
      matchOnDetail: true,
    });
    const chosen = (picked ?? []).map((i) => i.candidate).filter((c): c is Candidate => c !== undefined);
    if (!picked) {
      return;
    }
    if (chosen.length < 2) {
      void vscode.window.showInformationMessage('OpLens: pick two or more functions to compare.');
      return;
    }

    // one expression for all: the variants of one computation take the same inputs
    const first = chosen[0] as Candidate;
    let args = '';
    if (chosen.some((c) => c.fn.requiredParams > 0)) {
      const answer = await askArguments(
        this.memory,
        first.file,
        first.fn.qualname,
        first.fn,
        topLevelFunctionNames(first.functions),
        `OpLens: arguments for ${chosen.map((c) => c.fn.qualname).join(', ')}`,
      );
      if (answer === undefined) {
        return;
      }
      args = answer;
      for (const c of chosen) {
        await this.memory.remember(c.file, c.fn.qualname, args);
      }
    }
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && chosen.some((c) => c.uri.toString() === doc.uri.toString())) {
        await doc.save();
      }
    }

    const options = requestOptions(this.settings.value);
    const release = this.server.busy();
    this.panel.busy(`Comparing ${chosen.length} functions on ${options.backend.toUpperCase()}…`);
    try {
      const request = { targets: chosen.map((c) => ({ uri: c.uri.toString(), qualname: c.fn.qualname, args })), ...options };
      const title = `OpLens: comparing ${chosen.map((c) => c.fn.qualname).join(', ')} on ${options.backend.toUpperCase()}`;
      const result = await withRunProgress(this.server, this.notifier, title, (hook) => this.server.execute(COMPARE_COMMAND, request, undefined, hook));
      const page = parseComparePage(result);
      for (const row of page.rows) {
        if (!this.store.has(row.run_id)) {
          await this.profiler.fetchRun(row.run_id);
        }
      }
      const files: Record<string, string> = {};
      for (const row of page.rows) {
        const entry = this.store.get(row.run_id);
        files[row.run_id] = entry ? vscode.workspace.asRelativePath(vscode.Uri.parse(entry.uri), false) : '';
      }
      this.panel.showCompare({ page, files, failed: page.failed });
    } catch (e) {
      await this.profiler.reportFailure(e, 'the comparison', options.backend, {
        editArguments: () => this.compareFunctions(baseline),
      });
    } finally {
      this.panel.busy(null);
      release();
    }
  }

  /** The candidate around the cursor of `editor`, if any. */
  private functionAtCursor(editor: vscode.TextEditor, candidates: Candidate[]): { uri: string; qualname: string } | undefined {
    const uri = editor.document.uri.toString();
    const functions = candidates.find((c) => c.uri.toString() === uri)?.functions ?? [];
    const fn = enclosingFunction(functions, editor.selection.active.line + 1);
    return fn ? { uri, qualname: fn.qualname } : undefined;
  }

  /** The functions of the open Python files, as the server lists them (the baseline's file first). */
  private async candidates(baselineUri?: string): Promise<Candidate[]> {
    const docs = vscode.workspace.textDocuments.filter((d) => d.languageId === 'python' && d.uri.scheme === 'file');
    if (baselineUri && !docs.some((d) => d.uri.toString() === baselineUri)) {
      docs.unshift(await vscode.workspace.openTextDocument(vscode.Uri.parse(baselineUri)));
    }
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    const firstUri = baselineUri ?? active;
    docs.sort((a, b) => Number(b.uri.toString() === firstUri) - Number(a.uri.toString() === firstUri));
    const out: Candidate[] = [];
    const infos = await Promise.all(docs.map((doc) => this.documents.info(doc)));
    for (const [i, doc] of docs.entries()) {
      const functions = infos[i]?.functions ?? [];
      const file = vscode.workspace.asRelativePath(doc.uri, false);
      for (const fn of functions) {
        out.push({ uri: doc.uri, file, fn, functions });
      }
    }
    return out;
  }
}
