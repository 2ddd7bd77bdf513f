/**
 * Runs from before this session (kept in `.oplens/runs` and loaded by the server at start) get
 * their heat too: a document's `oplens/document` names the latest run of each of its functions;
 * those not yet here are fetched once with `oplens.showRun` (which also sends `oplens/result`).
 *
 * VS Code glue: imports `vscode`; its model is runStore.ts, its request fromServer.ts.
 */

import * as vscode from 'vscode';
import type { DocumentInfo } from '../documents/documentIndex';
import type { Documents } from '../documents/documents';
import type { OpLensServer } from '../server/server';
import { fetchRun } from './fromServer';
import type { RunStore } from './runStore';

export class EarlierRuns implements vscode.Disposable {
  /** Run ids asked for (once each, per server start: a run the server cannot show stays unasked). */
  private fetched = new Set<string>();
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    documents: Documents,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(
      server.onDidChangeState((state) => {
        if (state === 'starting') {
          this.fetched = new Set(); // a new server may know other runs
        }
      }),
      documents.onDidChange((info) => void this.fetchMissing(info)),
    );
  }

  private async fetchMissing(info: DocumentInfo): Promise<void> {
    for (const { runId } of info.runs) {
      if (this.store.has(runId) || this.fetched.has(runId)) {
        continue;
      }
      this.fetched.add(runId);
      try {
        await fetchRun(this.server, this.store, runId);
      } catch (e) {
        this.log.debug(`earlier run ${runId} of ${info.uri}: ${(e as Error).message}`);
      }
    }
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
