/**
 * Open Trace: a run's framework `trace.json` (the Chrome trace torch.profiler exports) in a
 * timeline drawn by the extension itself (extension/webview/trace.ts): offline, inside VS Code,
 * no Perfetto download. The file is read and laid out here (trace.ts) and sent to the page as
 * compact arrays; the page draws only what is on screen.
 *
 * VS Code glue: imports `vscode`; its model is trace.ts.
 */

import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import type { FromTraceViewer, ToTraceViewer } from '../../shared/messages';
import { TRACE_VIEW_TYPE } from '../../shared/names';
import { webviewHtml, webviewOptions } from '../results/html';
import type { ResultsView } from '../runs/resultsView';
import type { RunStore, StoredRun } from '../runs/runStore';
import { resolveArtifact } from '../server/pathMap';
import type { OpLensServer } from '../server/server';
import { layoutTrace } from './trace';

const MAX_TRACE_BYTES = 512 * 2 ** 20;

export class TraceViewer implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: RunStore,
    private readonly server: OpLensServer,
    private readonly results: ResultsView,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  private pickRun(runId?: string): StoredRun | undefined {
    if (runId) {
      return this.results.lookup(runId); // a stored run, or a rank's part the results page shows
    }
    const shown = this.results.currentRunId;
    return (shown ? this.store.get(shown) : undefined) ?? this.store.newest((e) => e.run.artifacts.trace_json !== '');
  }

  async open(runId?: string): Promise<void> {
    const entry = this.pickRun(runId);
    if (!entry) {
      void vscode.window.showInformationMessage('OpLens: no run with a trace yet. Profile a function first.');
      return;
    }
    const run = entry.run;
    if (!run.artifacts.trace_json) {
      void vscode.window.showInformationMessage(`OpLens: run ${run.run_id} kept no trace.json.`);
      return;
    }
    const hostPath = resolveArtifact(run.run_dir, run.artifacts.trace_json);
    const local = this.server.pathMap.toLocal(hostPath);
    const existing = this.panels.get(run.run_id);
    if (existing) {
      existing.reveal();
      return;
    }
    // a distributed run's trace is its first rank's (a rank's part: its own)
    const rank = run.ranks[0] ? ` · rank ${run.ranks[0].rank}` : '';
    const title = `Trace: ${run.target.qualname} (${run.backend.device_label}${rank})`;
    const panel = vscode.window.createWebviewPanel(TRACE_VIEW_TYPE, title, vscode.ViewColumn.Active, webviewOptions(this.extensionUri));
    this.panels.set(run.run_id, panel);
    panel.webview.html = webviewHtml(panel.webview, this.extensionUri, 'trace', title);
    const post = (m: ToTraceViewer): void => void panel.webview.postMessage(m);
    const listening = panel.webview.onDidReceiveMessage(async (m: FromTraceViewer) => {
      if (m.type === 'ready') {
        post(await this.load(local, hostPath, title));
      } else if (m.type === 'revealLine') {
        await this.results.revealLine(run.run_id, m.line);
      }
    });
    panel.onDidDispose(() => {
      listening.dispose();
      this.panels.delete(run.run_id);
    });
  }

  private async load(local: string, hostPath: string, title: string): Promise<ToTraceViewer> {
    try {
      const stat = await fs.stat(local);
      if (stat.size > MAX_TRACE_BYTES) {
        return { type: 'error', message: `${local} is ${(stat.size / 2 ** 20).toFixed(0)} MiB, more than this viewer reads; open it in Perfetto.` };
      }
      const started = Date.now();
      const model = layoutTrace(JSON.parse(await fs.readFile(local, 'utf8')), title);
      this.log.info(`trace ${local}: ${model.start.length} events in ${model.lanes.length} lanes, laid out in ${Date.now() - started} ms`);
      return { type: 'trace', model };
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ENOENT') {
        return {
          type: 'error',
          message:
            local === hostPath
              ? `${local} does not exist (was the run directory removed?).`
              : `${local} is not on this machine (host path ${hostPath}); add a path mapping (oplens.pathMappings) that reaches the runs directory.`,
        };
      }
      return { type: 'error', message: `cannot read ${local}: ${err.message}` };
    }
  }

  dispose(): void {
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
  }
}
