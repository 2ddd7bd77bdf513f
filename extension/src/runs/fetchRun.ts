/**
 * A run the server keeps, asked for by id (`oplens.showRun`) and put in the store: for a run named
 * by a lens, a document's earlier runs, a comparison's rows, a rank merge. The server also re-sends
 * `oplens/result` for it.
 *
 * VS Code glue: imports `vscode`; its model is runStore.ts.
 */

import * as vscode from 'vscode';
import { SHOW_RUN_COMMAND } from '../../shared/names';
import type { OpLensServer } from '../server/server';
import { parseRun } from './parseRun';
import type { RunStore } from './runStore';

export async function fetchRun(server: OpLensServer, store: RunStore, runId: string): Promise<void> {
  const answer = (await server.execute(SHOW_RUN_COMMAND, { run_id: runId })) as { uri?: unknown; run?: unknown } | null;
  if (answer && typeof answer.uri === 'string') {
    store.add(vscode.Uri.parse(answer.uri).toString(), parseRun(answer.run));
  }
}
