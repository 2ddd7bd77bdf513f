/**
 * "OpLens: Merge Runs of Several Hosts…": a distributed capture across hosts leaves one run
 * directory per host; where those directories are on the server's host (a shared file system, or
 * copied there), the user picks them and the server merges them (`oplens.merge`, as `oplens merge
 * DIR...`). The merged run comes like a profile's (`oplens/result`), and the results panel opens on
 * it. Meanwhile a notification with Cancel shows the server's progress (each rank's part copied);
 * Cancel stops the merge, which stores nothing. The decisions and texts are merge.ts's.
 *
 * VS Code glue: imports `vscode`; its model is merge.ts.
 */

import * as vscode from 'vscode';
import { MERGE_COMMAND } from '../../shared/names';
import type { Notifier } from '../problems/notify';
import type { RpcError } from '../problems/problems';
import { withRunProgress } from '../progress/notification';
import { parseProfileResponse } from '../runs/parseRun';
import type { ResultsView } from '../runs/resultsView';
import type { RunStore } from '../runs/runStore';
import { ServerUnavailable } from '../server/contract';
import type { OpLensServer } from '../server/server';
import { expandPath, workspaceRoot, type SettingsSource } from '../settings/source';
import { defaultRunsFolder, describeMergeError, mergedMessage, mergeRequest, mergeUnsupported } from './merge';

export class RunMerger {
  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly settings: SettingsSource,
    private readonly notifier: Notifier,
    private readonly panel: ResultsView,
    /** Ask the server for a run it keeps (`oplens.showRun`), when its `oplens/result` did not come. */
    private readonly fetchRun: (runId: string) => Promise<void>,
    private readonly extensionVersion: string,
  ) {}

  /** The command: pick the folders, merge them, show the merged run; its id, or undefined. */
  async mergeRuns(): Promise<string | undefined> {
    try {
      await this.server.ready();
    } catch (e) {
      await this.serverDown(e);
      return undefined;
    }
    const unsupported = mergeUnsupported(this.server.serverCommands, this.server.serverVersion, this.extensionVersion);
    if (unsupported) {
      await this.notifier.show(unsupported, { restartServer: () => this.server.restart(0) });
      return undefined;
    }
    const dirs = await this.pickFolders();
    return dirs ? this.merge(dirs) : undefined;
  }

  /** The run directories, one per host (two or more, unless the user insists); undefined when cancelled. */
  private async pickFolders(): Promise<string[] | undefined> {
    const start = defaultRunsFolder({
      runsDirectory: expandPath(this.settings.value.runsDirectory),
      workspace: workspaceRoot()?.uri.scheme === 'file' ? workspaceRoot()?.uri.fsPath : undefined,
      websocket: this.server.connection?.kind === 'websocket',
    });
    for (;;) {
      const picked = await vscode.window.showOpenDialog({
        canSelectFolders: true,
        canSelectFiles: false,
        canSelectMany: true,
        defaultUri: start ? vscode.Uri.file(start) : undefined,
        openLabel: 'Merge',
        title: 'OpLens: the run directories of one distributed capture, one per host',
      });
      if (!picked || picked.length === 0) {
        return undefined;
      }
      const request = mergeRequest(picked);
      if ('problem' in request) {
        void vscode.window.showErrorMessage(request.problem);
        return undefined;
      }
      if (request.dirs.length > 1) {
        return request.dirs;
      }
      const again = 'Choose Folders…';
      const choice = await vscode.window.showWarningMessage(
        `OpLens: one folder picked (${request.dirs[0] ?? ''}). Merging takes the run directory of each host: pick them all (Ctrl/Cmd-click).`,
        again,
        'Merge It Alone',
      );
      if (choice !== again) {
        return choice === undefined ? undefined : request.dirs;
      }
    }
  }

  private async merge(dirs: string[]): Promise<string | undefined> {
    const release = this.server.busy();
    const what = dirs.length === 1 ? 'one run' : `the runs of ${dirs.length} hosts`;
    this.panel.busy(`Merging ${what}…`);
    try {
      const answer = await withRunProgress(this.server, this.notifier, `OpLens: merging ${what}`, (hook) =>
        this.server.execute(MERGE_COMMAND, { dirs }, undefined, hook),
      );
      const response = parseProfileResponse(answer);
      if (!this.store.has(response.run_id)) {
        await this.fetchRun(response.run_id); // the result notification normally came first
      }
      this.panel.busy(null);
      await this.panel.showRun(response.run_id, true);
      vscode.window.setStatusBarMessage(mergedMessage(response.qualname, this.store.get(response.run_id)?.run.ranks.length, response.title), 10_000);
      return response.run_id;
    } catch (e) {
      this.panel.busy(null);
      if (e instanceof ServerUnavailable) {
        await this.serverDown(e);
      } else {
        const err = e as RpcError;
        const problem = describeMergeError({ code: err.code, message: String(err.message ?? e), data: err.data }, this.server.serverVersion, this.extensionVersion);
        await this.notifier.show(problem, { restartServer: () => this.server.restart(0) });
      }
      return undefined;
    } finally {
      this.panel.busy(null);
      release();
    }
  }

  private async serverDown(e: unknown): Promise<void> {
    const message = e instanceof ServerUnavailable ? 'the OpLens server is not running' : String((e as Error).message ?? e);
    await this.notifier.show(
      {
        severity: 'error',
        message: `OpLens: cannot merge runs: ${message}.`,
        actions: [
          { kind: 'restartServer', title: 'Restart Server' },
          { kind: 'showOutput', title: 'Show Output' },
        ],
      },
      { restartServer: () => this.server.restart(0) },
    );
  }
}
