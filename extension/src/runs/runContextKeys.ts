/**
 * Keeps the context keys of runContext.ts set as runs arrive and are cleared (`setContext`), so the
 * command palette and menus offer only the commands that apply.
 *
 * VS Code glue: imports `vscode`; its model is runContext.ts.
 */

import * as vscode from 'vscode';
import type { RunStore } from './runStore';
import { runContext } from './runContext';

export class RunContextKeys implements vscode.Disposable {
  private readonly set = new Map<string, boolean>();
  private readonly subscription: { dispose(): void };

  constructor(private readonly store: RunStore) {
    this.subscription = store.onDidChange(() => this.update());
    this.update();
  }

  private update(): void {
    for (const [key, value] of Object.entries(runContext(this.store.all().map((e) => e.run)))) {
      if (this.set.get(key) !== value) {
        this.set.set(key, value);
        void vscode.commands.executeCommand('setContext', key, value);
      }
    }
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
