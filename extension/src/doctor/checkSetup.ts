/**
 * "OpLens: Check Setup": `oplens.doctor` on the server, so on the server's host (this machine, the
 * Remote-SSH host, or wherever the WebSocket server runs), for the backend of the settings. Each
 * check goes to the OpLens output, the verdict to a notification; a progress notification while it
 * runs (it starts a worker and profiles: 10-30 s). The texts are doctor.ts's.
 *
 * VS Code glue: imports `vscode`; its model is doctor.ts.
 */

import * as os from 'node:os';
import * as vscode from 'vscode';
import { DOCTOR_COMMAND } from '../../shared/names';
import type { Notifier } from '../problems/notify';
import { ServerUnavailable } from '../server/contract';
import type { OpLensServer } from '../server/server';
import type { SettingsSource } from '../settings/source';
import { doctorVerdict, parseDoctorReport, reportLines } from './doctor';

export async function checkSetup(server: OpLensServer, settings: SettingsSource, notifier: Notifier, log: vscode.LogOutputChannel): Promise<void> {
  const backend = settings.value.backend;
  const c = server.connection;
  const where = c?.kind === 'websocket' ? c.url : os.hostname();
  let answer: unknown;
  try {
    answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `OpLens: checking setup on ${where} (backend ${backend})…`, cancellable: true },
      (_, token) => server.execute(DOCTOR_COMMAND, { backend }, token),
    );
  } catch (e) {
    const server_ = e instanceof ServerUnavailable;
    const message = server_ ? 'the OpLens server is not running' : String((e as Error).message ?? e);
    await notifier.show(
      {
        severity: 'error',
        message: `OpLens: Check Setup failed: ${message}`,
        actions: server_ ? [{ kind: 'restartServer', title: 'Restart Server' }] : [{ kind: 'showOutput', title: 'Show Output' }],
      },
      { restartServer: () => server.restart(0) },
    );
    return;
  }
  let report;
  try {
    report = parseDoctorReport(answer);
  } catch (e) {
    log.error(`oplens.doctor: unreadable answer: ${(e as Error).message}`);
    void vscode.window.showErrorMessage(`OpLens: Check Setup: the server's answer is unreadable (${(e as Error).message}).`);
    return;
  }
  for (const line of reportLines(report, where)) {
    log.info(line);
  }
  await notifier.show(doctorVerdict(report, where));
}
