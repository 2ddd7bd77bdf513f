/**
 * Show Flame Graph: a run's stacks (function → line → op, host time and self device time) in speedscope, bundled
 * in the extension and opened in a webview beside the code; a frame's line opens in the editor. The stacks come
 * from the server (`oplens.flameGraph`, exports/speedscope.py on the host, the frames' files in this side's terms).
 *
 * VS Code glue: imports `vscode`; its page and the answer's checks are flamePage.ts.
 */

import * as vscode from 'vscode';
import type { FromFlameGraph, ToFlameGraph } from '../../shared/messages';
import { FLAME_GRAPH_COMMAND, FLAME_GRAPH_VIEW_TYPE } from '../../shared/names';
import type { ResultsView } from '../runs/resultsView';
import type { OpLensServer } from '../server/server';
import { flamePageHtml, parseFlameAnswer, type FlameAnswer } from './flamePage';

export class FlameGraphs implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: OpLensServer,
    private readonly results: ResultsView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The flame graph of run `runId` (default: the run the results page shows). */
  async open(runId?: string): Promise<void> {
    const id = runId ?? this.results.currentRunId;
    const entry = id ? this.results.lookup(id) : undefined;
    if (!id || !entry) {
      void vscode.window.showInformationMessage('OpLens: show a run on the results page first, then its flame graph.');
      return;
    }
    const existing = this.panels.get(id);
    if (existing) {
      existing.reveal();
      return;
    }
    let answer: FlameAnswer | undefined;
    try {
      answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'OpLens: reading the run’s stacks…' },
        async () => parseFlameAnswer(await this.server.execute(FLAME_GRAPH_COMMAND, { run_id: id })),
      );
    } catch (e) {
      void vscode.window.showErrorMessage(`OpLens: no flame graph of run ${id}: ${(e as Error).message}`);
      return;
    }
    if (!answer) {
      this.log.warn(`${FLAME_GRAPH_COMMAND}: an answer OpLens cannot read`);
      return;
    }
    this.show(id, entry.run.target.file, answer);
  }

  private show(runId: string, targetFile: string, answer: FlameAnswer): void {
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    const panel = vscode.window.createWebviewPanel(FLAME_GRAPH_VIEW_TYPE, answer.title, vscode.ViewColumn.Active, {
      enableScripts: true,
      enableCommandUris: false,
      localResourceRoots: [vscode.Uri.joinPath(dist, 'webview'), vscode.Uri.joinPath(dist, 'speedscope')],
      retainContextWhenHidden: true, // speedscope keeps its zoom and selection while the tab is in the background
    });
    this.panels.set(runId, panel);
    const asset = (...path: string[]): string => panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, ...path)).toString();
    panel.webview.html = flamePageHtml({
      cspSource: panel.webview.cspSource,
      speedscopeJs: asset('speedscope', 'speedscope.js'),
      speedscopeCss: asset('speedscope', 'speedscope.css'),
      loaderJs: asset('webview', 'flame.js'),
      loaderCss: asset('webview', 'flame.css'),
      title: answer.title,
    });
    const post = (m: ToFlameGraph): void => void panel.webview.postMessage(m);
    const local = this.server.pathMap.toLocal(targetFile);
    const listening = panel.webview.onDidReceiveMessage(async (m: FromFlameGraph) => {
      if (m.type === 'ready') {
        post({ type: 'profile', fileName: answer.fileName, text: JSON.stringify(answer.profile), hint: answer.hint });
      } else if (m.type === 'openLine') {
        this.log.info(`flame graph: open ${m.file}:${m.line}`);
        if (m.file === local || m.file === targetFile) {
          await this.results.revealLine(runId, m.line); // the function's own file: where the line is now
        } else {
          const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(m.file));
          const at = new vscode.Position(Math.max(0, m.line - 1), 0);
          await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(at, at) });
        }
      } else if (m.type === 'failed') {
        this.log.warn(`flame graph of ${runId}: speedscope could not read it: ${m.message}`);
      }
    });
    panel.onDidDispose(() => {
      listening.dispose();
      this.panels.delete(runId);
    });
  }

  dispose(): void {
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
  }
}
