/**
 * The notification with Cancel that Profile Function, Profile Function in Program…, Program
 * Overview…, Compare Functions… and Merge Runs… show while the server works (runProgress.ts says
 * how its words and its Cancel map to the server's), and "Cancel OpLens Run" (`oplens.cancel`:
 * every run this window has on the server).
 *
 * VS Code glue: imports `vscode`; its model is runProgress.ts.
 */

import * as vscode from 'vscode';
import { CANCEL_COMMAND } from '../../shared/names';
import type { Notifier } from '../problems/notify';
import type { WorkDoneHook } from '../server/contract';
import type { OpLensServer } from '../server/server';
import { RunProgress } from './runProgress';

/**
 * `work` under a cancellable notification titled `title`: `work` sends its request with the hook
 * it is given (`OpLensServer.execute`), so the server's progress is drawn here and Cancel reaches
 * that run. The request then fails as cancelled, which `work` reports as it reports any failure.
 */
export function withRunProgress<T>(server: OpLensServer, notifier: Notifier, title: string, work: (hook: WorkDoneHook) => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
    const run = new RunProgress(
      (step) => progress.report(step),
      (workDoneToken) => server.cancelProgress(workDoneToken),
    );
    const onCancel = token.onCancellationRequested(() => {
      run.cancel().catch((e: Error) => notifier.show({ severity: 'error', message: `OpLens: cannot cancel: ${e.message}`, actions: [] }));
    });
    try {
      return await work(run);
    } finally {
      onCancel.dispose();
    }
  });
}

/** "Cancel OpLens Run": `oplens.cancel`, every profile, compare, capture and merge this window runs on the server. */
export async function cancelRuns(server: OpLensServer, notifier: Notifier): Promise<void> {
  if (server.state !== 'busy') {
    void vscode.window.showInformationMessage('OpLens: no run to cancel.');
    return;
  }
  try {
    await server.execute(CANCEL_COMMAND, {});
  } catch (e) {
    await notifier.show({ severity: 'error', message: `OpLens: cannot cancel: ${(e as Error).message}`, actions: [] });
  }
}
