/**
 * Open in Neuron Explorer: the server (on the Trainium host) uploads the run's profile to the viewer and
 * starts `neuron-explorer view` if needed (`oplens.openExplorer`, answering with the profile's URL
 * and ports); the extension then makes the page reachable from the user's browser:
 *
 * - extension on the host (Remote-SSH, or local): `vscode.env.asExternalUri` for the UI *and* the
 *   API port, so VS Code forwards both (the page calls the API from the browser), then opens it;
 * - WebSocket mode (the server is elsewhere): the exact `ssh -L ui:localhost:ui -L api:localhost:api
 *   HOST` command, shown and copied, then the page once the tunnel is up.
 *
 * Where the AWS Neuron Explorer extension is installed, it is offered too: the server uploaded the profile
 * to the viewer's API, which that extension lists as well (its custom endpoint localhost:<api port>); for
 * its Local Binary mode the profile directory is copied, to paste into its Upload Profile.
 *
 * VS Code glue: imports `vscode`; its model is explorer.ts.
 */

import * as vscode from 'vscode';
import { OPEN_EXPLORER_COMMAND } from '../../shared/names';
import { isOverview, type Run } from '../../shared/run';
import type { Notifier } from '../problems/notify';
import type { Profiler } from '../profile/profiler';
import { ofLines, type RunStore, type StoredRun } from '../runs/runStore';
import type { OpLensServer } from '../server/server';
import type { SettingsSource } from '../settings/source';
import { awsExtensionGuide, explorerUnavailable, parseExplorerRecord, tunnelFor, viewContainerId, withPort, type ExplorerRecord } from './explorer';

export const AWS_EXPLORER_EXTENSION = 'AmazonWebServices.neuron-explorer';

export class ExplorerOpener {
  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly settings: SettingsSource,
    private readonly notifier: Notifier,
    private readonly profiler: Profiler,
    private readonly openTrace: (runId: string) => unknown,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /**
   * The run to open: `runId` when it is a Neuron run, else the newest Neuron run, else `runId` or the newest run
   * (a function's run: a program overview has no device profile of its own).
   */
  private pickRun(runId?: string): StoredRun<Run> | undefined {
    const given = ofLines(runId ? this.store.get(runId) : undefined);
    if (given?.run.backend.name === 'neuron') {
      return given;
    }
    const lines = (e: StoredRun): boolean => !isOverview(e.run);
    return ofLines(this.store.newest((e) => lines(e) && e.run.backend.name === 'neuron')) ?? given ?? ofLines(this.store.newest(lines));
  }

  /** `runId`: the run on show (the panel's button, or the palette with the panel open). */
  async open(runId?: string): Promise<void> {
    const entry = this.pickRun(runId);
    if (!entry) {
      void vscode.window.showInformationMessage('OpLens: no run yet. Profile a function on Trainium (oplens.backend "neuron" or "auto") first.');
      return;
    }
    const run = entry.run;
    const why = explorerUnavailable(run);
    if (why) {
      const canTrace = run.artifacts.trace_json !== '';
      const choice = await vscode.window.showInformationMessage(`OpLens: ${why}`, ...(canTrace ? ['Open Trace'] : []));
      if (choice === 'Open Trace') {
        await this.openTrace(run.run_id);
      }
      return;
    }
    const { uiPort, apiPort } = this.settings.value.explorer;
    let record: ExplorerRecord;
    try {
      const answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'OpLens: uploading the profile to Neuron Explorer…', cancellable: true },
        (_progress, token) => this.server.execute(OPEN_EXPLORER_COMMAND, { run_id: run.run_id, uiPort, apiPort }, token),
      );
      record = parseExplorerRecord(answer);
    } catch (e) {
      await this.profiler.reportFailure(e, `Neuron Explorer for ${run.target.qualname}`, run.backend.name);
      return;
    }
    for (const m of record.messages) {
      this.log.info(`Neuron Explorer: ${m}`);
    }
    if (this.server.connection?.kind === 'websocket') {
      await this.openThroughTunnel(record);
    } else {
      await this.openForwarded(record);
    }
    const own = run.artifacts.device_profile_dir || run.artifacts.profile_output_dir;
    await this.offerAwsExtension(record, own ? `${run.run_dir}/${own}` : run.run_dir);
  }

  /** The extension runs on the host: forward both ports through VS Code and open the page. */
  private async openForwarded(r: ExplorerRecord): Promise<void> {
    const ui = await vscode.env.asExternalUri(vscode.Uri.parse(`http://localhost:${r.uiPort}`));
    const api = await vscode.env.asExternalUri(vscode.Uri.parse(`http://localhost:${r.apiPort}`));
    const uiPort = Number(ui.authority.split(':').pop());
    const apiPort = Number(api.authority.split(':').pop());
    const page = vscode.Uri.parse(Number.isInteger(uiPort) && uiPort !== r.uiPort ? withPort(r.profileUrl, uiPort) : r.profileUrl);
    const external = await vscode.env.asExternalUri(page);
    if (Number.isInteger(apiPort) && apiPort !== r.apiPort) {
      void vscode.window.showWarningMessage(
        `OpLens: Neuron Explorer's API port ${r.apiPort} was forwarded to local port ${apiPort}; the page expects ${r.apiPort} and may load empty. ` +
          `Free local port ${r.apiPort}, or forward both ports yourself: ${tunnelFor(r)}`,
      );
    }
    const opened = await vscode.env.openExternal(external);
    if (!opened) {
      await vscode.env.clipboard.writeText(external.toString());
      void vscode.window.showInformationMessage(`OpLens: Neuron Explorer is at ${external.toString()} (copied).`);
    }
  }

  /** The server is elsewhere: the user forwards both ports with ssh, then opens the page. */
  private async openThroughTunnel(r: ExplorerRecord): Promise<void> {
    const command = tunnelFor(r);
    await vscode.env.clipboard.writeText(command);
    const choice = await vscode.window.showInformationMessage(
      `OpLens: Neuron Explorer is ready on the host. Forward both of its ports from this machine (copied to the clipboard): ${command}  — then open ${r.profileUrl}`,
      { modal: false },
      'Open in Browser',
      'Copy Command',
    );
    if (choice === 'Open in Browser') {
      await vscode.env.openExternal(vscode.Uri.parse(r.profileUrl));
    } else if (choice === 'Copy Command') {
      await vscode.env.clipboard.writeText(command);
    }
  }

  /**
   * Offer the AWS Neuron Explorer extension, where installed, as its docs tell to open a profile in it
   * (get-started.rst, "Using VS Code instead of the browser"): the profile OpLens uploaded is listed in its
   * Profile Manager on the custom endpoint localhost:<api port>; with Local Binary, Upload Profile takes the
   * pasted profile directory. So: copy that directory, reveal the extension's view (its manifest's view
   * container, through VS Code's `workbench.view.extension.<id>`), and say which way to go.
   */
  private async offerAwsExtension(r: ExplorerRecord, fallbackDir: string): Promise<void> {
    const aws = vscode.extensions.getExtension(AWS_EXPLORER_EXTENSION);
    if (!aws) {
      return;
    }
    const choice = await vscode.window.showInformationMessage('OpLens: the AWS Neuron Explorer extension is installed. Show this profile there too?', 'Show There');
    if (!choice) {
      return;
    }
    const guide = awsExtensionGuide(r, fallbackDir);
    await vscode.env.clipboard.writeText(guide.copy);
    const container = viewContainerId(aws.packageJSON);
    try {
      if (container) {
        await vscode.commands.executeCommand(`workbench.view.extension.${container}`);
      }
      void vscode.window.showInformationMessage(guide.message);
    } catch (e) {
      void this.notifier.show({
        severity: 'warning',
        message: `OpLens: the Neuron Explorer extension's view did not open (${(e as Error).message}). ${guide.message}`,
        actions: [],
      });
    }
  }
}
