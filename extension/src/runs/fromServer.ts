/**
 * The runs the server sends into the store: each `oplens/result` notification (a run just made, or
 * one asked for), and a run it keeps, asked for by id (`oplens.showRun`: for a run named by a lens, a
 * document's earlier runs, a comparison's rows, a rank merge; the server also re-sends
 * `oplens/result` for it).
 *
 * VS Code glue: imports `vscode`; its models are runStore.ts and parseRun.ts.
 */

import * as vscode from 'vscode';
import { SHOW_RUN_COMMAND } from '../../shared/names';
import type { OpLensServer } from '../server/server';
import { parseAnyRun, parseResultNotification } from './parseRun';
import type { RunStore } from './runStore';

/**
 * Keep every run `oplens/result` brings; one the server asks to reveal (a notebook kernel's new run)
 * goes to `reveal` once stored, shown as one asked for here.
 */
export function keepResults(server: OpLensServer, store: RunStore, log: vscode.LogOutputChannel, reveal: (runId: string) => void): vscode.Disposable {
  return server.onResult((params) => {
    try {
      const { uri, run, reveal: shown } = parseResultNotification(params);
      store.add(vscode.Uri.parse(uri).toString(), run);
      if (shown) {
        reveal(run.run_id);
      }
    } catch (e) {
      log.error(`unreadable oplens/result: ${(e as Error).message}`);
    }
  });
}

export async function fetchRun(server: OpLensServer, store: RunStore, runId: string): Promise<void> {
  const answer = (await server.execute(SHOW_RUN_COMMAND, { run_id: runId })) as { uri?: unknown; run?: unknown } | null;
  if (answer && typeof answer.uri === 'string') {
    store.add(vscode.Uri.parse(answer.uri).toString(), parseAnyRun(answer.run));
  }
}
