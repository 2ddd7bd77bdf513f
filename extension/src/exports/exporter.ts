/**
 * The results page's Export…: the run written for Perfetto, speedscope or TensorBoard/HTA by the server
 * (`oplens.export`, on the host, into the run's `exports/` folder), then where it is and how to open it.
 *
 * VS Code glue: imports `vscode`; the answer is checked by exportAnswer.ts (pure, unit-tested).
 */

import * as vscode from 'vscode';
import { EXPORT_COMMAND, OPEN_PERFETTO_COMMAND } from '../../shared/names';
import type { OpLensServer } from '../server/server';
import { EXPORT_CHOICES, externalPath, parseExportAnswer, type ExportAnswer } from './exportAnswer';

export class RunExporter {
  /**
   * Open in Perfetto: the server writes the trace and serves the one-shot page that hands it to Perfetto UI (on its
   * host's 127.0.0.1); the page opens in the user's browser through `asExternalUri` (in Remote-SSH a port forwarded
   * to the laptop's localhost, from where the UI opens a page without its "Open trace?" prompt).
   */
  async openInPerfetto(runId: string): Promise<void> {
    let url: string | undefined;
    try {
      const answer = (await this.server.execute(OPEN_PERFETTO_COMMAND, { run_id: runId })) as { url?: unknown; notes?: unknown } | null;
      url = typeof answer?.url === 'string' ? answer.url : undefined;
      for (const note of Array.isArray(answer?.notes) ? answer.notes : []) {
        this.log.warn(`open in Perfetto: ${String(note)}`);
      }
    } catch (e) {
      void vscode.window.showErrorMessage(`OpLens: cannot open the run in Perfetto: ${(e as Error).message}`);
      return;
    }
    if (!url) {
      this.log.warn(`${OPEN_PERFETTO_COMMAND}: an answer OpLens cannot read`);
      return;
    }
    const page = vscode.Uri.parse(url);
    const mapped = await vscode.env.asExternalUri(page);
    const external = mapped.with({ path: externalPath(page.path, mapped.path) });
    this.log.info(`open in Perfetto: ${url} → ${external.toString()}`);
    if (await vscode.env.openExternal(external)) {
      void vscode.window.showInformationMessage('OpLens: a page in your browser opens Perfetto UI with this run: click its button (the browser allows a new tab only from a click).');
    }
  }

  constructor(
    private readonly server: OpLensServer,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async export(runId: string): Promise<void> {
    const picked = await vscode.window.showQuickPick(
      EXPORT_CHOICES.map((c) => ({ label: c.label, detail: c.detail, format: c.format })),
      { title: 'OpLens: export the run for…', ignoreFocusOut: true },
    );
    if (!picked) {
      return;
    }
    let answer: ExportAnswer | undefined;
    try {
      answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `OpLens: exporting the run for ${picked.label}…` },
        async () => parseExportAnswer(await this.server.execute(EXPORT_COMMAND, { run_id: runId, format: picked.format })),
      );
    } catch (e) {
      void vscode.window.showErrorMessage(`OpLens: the export failed: ${(e as Error).message}`);
      return;
    }
    if (!answer) {
      this.log.warn(`${EXPORT_COMMAND}: an answer OpLens cannot read`);
      return;
    }
    this.log.info(`exported ${runId} as ${answer.format}: ${answer.path}`);
    const notes = answer.notes.length ? ` Note: ${answer.notes.join('; ')}.` : '';
    const choice = await vscode.window.showInformationMessage(`OpLens: exported to ${answer.path}. ${answer.opensIn}.${notes}`, 'Reveal', 'Copy Path');
    if (choice === 'Copy Path') {
      await vscode.env.clipboard.writeText(answer.path);
    } else if (choice === 'Reveal') {
      await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.parse(answer.uri));
    }
  }
}
