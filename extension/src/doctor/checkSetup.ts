/**
 * "OpLens: Check Setup": `oplens.doctor` on the server, so on the server's host (this machine, the
 * Remote-SSH host, or wherever the WebSocket server runs), for the backend of the settings. Each
 * check goes to the OpLens output, the verdict to a notification whose Show Checklist opens every
 * check with its fix (showChecklist.ts); a progress notification while it runs (it starts a worker
 * and profiles: 10-30 s). The texts are the server's report's, put together by doctor.ts.
 *
 * VS Code glue: imports `vscode`; its models are doctor.ts and checklist.ts.
 */

import * as os from 'node:os';
import * as vscode from 'vscode';
import { DOCTOR_COMMAND } from '../../shared/names';
import type { Notifier } from '../problems/notify';
import { ServerUnavailable } from '../server/contract';
import type { OpLensServer } from '../server/server';
import type { SettingsSource } from '../settings/source';
import { BUTTONS, checklist } from './checklist';
import { doctorVerdict, parseDoctorReport, reportHeading, reportLines, verdictLine, type DoctorReport } from './doctor';
import { doFix, showChecklist } from './showChecklist';

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
  await showVerdict(report, where, c?.kind !== 'websocket', log);
}

/**
 * The verdict's notification, logged as the notifier would: Show Checklist first, then its own
 * actions (Show Output, Copy Fix: doctor.ts's).
 */
async function showVerdict(report: DoctorReport, where: string, local: boolean, log: vscode.LogOutputChannel): Promise<void> {
  const verdict = doctorVerdict(report, where);
  const [write, show] =
    verdict.severity === 'error'
      ? [log.error, vscode.window.showErrorMessage]
      : verdict.severity === 'warning'
        ? [log.warn, vscode.window.showWarningMessage]
        : [log.info, vscode.window.showInformationMessage];
  write.call(log, verdict.message);
  const chosen = await show(verdict.message, BUTTONS.showChecklist, ...verdict.actions.map((a) => a.title));
  if (chosen === BUTTONS.showChecklist) {
    await showChecklist(checklist(report, { local }), reportHeading(report, where), verdictLine(report), log);
    return;
  }
  const action = verdict.actions.find((a) => a.title === chosen);
  if (action?.kind === 'showOutput') {
    log.show(true);
  } else if (action?.kind === 'copy') {
    await doFix({ kind: 'copy', title: action.title, text: action.text });
  }
}
