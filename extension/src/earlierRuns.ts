/**
 * Runs from before this session (kept in `.oplens/runs` and loaded by the server at start) get
 * their heat too: when a Python file becomes visible, the server's totals lenses name the runs of
 * its functions; those not yet here are fetched once with `oplens.showRun`.
 */

import * as vscode from 'vscode';
import { CodeLensRequest } from 'vscode-languageclient/node';
import type { RunStore } from './core/runStore';
import type { Profiler } from './profiling';
import type { OpLensServer } from './server';

export class EarlierRuns implements vscode.Disposable {
  private scanned = new Set<string>();
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly server: OpLensServer,
    private readonly store: RunStore,
    private readonly profiler: Profiler,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscriptions.push(
      server.onDidChangeState((state) => {
        if (state === 'ready') {
          this.scanned = new Set(); // a new server may know other runs
          this.scanVisible();
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.scanVisible()),
    );
  }

  scanVisible(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      void this.scan(editor.document);
    }
  }

  private async scan(doc: vscode.TextDocument): Promise<void> {
    const uri = doc.uri.toString();
    if (doc.languageId !== 'python' || doc.uri.scheme !== 'file' || this.scanned.has(uri) || this.server.state !== 'ready') {
      return;
    }
    this.scanned.add(uri);
    try {
      const client = await this.server.ready();
      const lenses = (await client.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) ?? [];
      for (const lens of lenses) {
        const arg = lens.command?.command === 'oplens.showRun' ? (lens.command.arguments?.[0] as { run_id?: unknown } | undefined) : undefined;
        if (typeof arg?.run_id === 'string' && !this.store.has(arg.run_id)) {
          await this.profiler.fetchRun(arg.run_id);
        }
      }
    } catch (e) {
      this.log.debug(`earlier runs of ${uri}: ${(e as Error).message}`);
    }
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
