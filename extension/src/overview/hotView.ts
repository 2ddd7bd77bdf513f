/**
 * The **Hot Functions** view (Explorer side bar): the latest program overview's functions, hottest
 * first by self or total device time (the title bar's button switches), each row its time and share
 * per step and its file and line; a click opens the function, the row's ▶ captures its lines in the
 * same program (`▶ lines`). The rows are the server's `oplens.hotFunctions` answer; the view shows
 * once the workspace has an overview (`oplens.hasOverview`) and refreshes when a new one arrives or
 * the server (re)connects.
 *
 * VS Code glue: imports `vscode`; its model is hotFunctions.ts.
 */

import * as vscode from 'vscode';
import type { HotSort } from '../../shared/overview';
import { HOT_FUNCTIONS_COMMAND, HOT_FUNCTIONS_VIEW } from '../../shared/names';
import { isOverview } from '../../shared/run';
import type { RunStore } from '../runs/runStore';
import type { OpLensServer } from '../server/server';
import { hotHeadline, hotRows, otherSort, parseHotFunctions, type HotRow } from './hotFunctions';

export const HAS_OVERVIEW_CONTEXT = 'oplens.hasOverview';
const LINES_ITEM = 'oplens.hotFunction.lines';

export class HotFunctionsView implements vscode.TreeDataProvider<HotRow>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly view: vscode.TreeView<HotRow>;
  private readonly subscriptions: vscode.Disposable[];
  private rows: HotRow[] = [];
  private sort: HotSort = 'self';
  private asking: Promise<void> | undefined;

  readonly onDidChangeTreeData = this.changed.event;

  constructor(
    private readonly server: OpLensServer,
    store: RunStore,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.view = vscode.window.createTreeView(HOT_FUNCTIONS_VIEW, { treeDataProvider: this, showCollapseAll: false });
    this.subscriptions = [
      this.changed,
      this.view,
      server.onDidChangeState(() => {
        if (server.isReady) {
          void this.refresh();
        }
      }),
      store.onDidChange((change) => {
        if (change.kind === 'added' ? isOverview(change.entry.run) : change.uri === undefined) {
          void this.refresh(); // a new overview; or all cleared
        }
      }),
    ];
  }

  /** Ask the server for the latest overview's functions again. */
  refresh(): Promise<void> {
    this.asking ??= this.ask().finally(() => (this.asking = undefined));
    return this.asking;
  }

  private async ask(): Promise<void> {
    if (!this.server.isReady) {
      return;
    }
    try {
      const answer = parseHotFunctions(await this.server.execute(HOT_FUNCTIONS_COMMAND, { sort: this.sort }));
      this.rows = answer ? hotRows(answer) : [];
      this.view.message = answer ? hotHeadline(answer) : undefined;
      await vscode.commands.executeCommand('setContext', HAS_OVERVIEW_CONTEXT, answer !== null);
    } catch (e) {
      this.log.warn(`hot functions: ${(e as Error).message}`);
    }
    this.changed.fire();
  }

  /** The title bar's button: self ↔ total. */
  async toggleSort(): Promise<void> {
    this.sort = otherSort(this.sort);
    await this.refresh();
  }

  /** Show the view (a click on an overview lens). */
  async reveal(): Promise<void> {
    await this.refresh();
    const first = this.rows[0];
    if (first) {
      await this.view.reveal(first, { focus: false, select: false });
    }
  }

  getTreeItem(row: HotRow): vscode.TreeItem {
    const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
    item.description = row.description;
    item.tooltip = row.tooltip;
    item.id = `${row.uri}#${row.fn.qualname}`;
    item.resourceUri = vscode.Uri.parse(row.uri);
    item.iconPath = new vscode.ThemeIcon('flame');
    item.contextValue = row.canProfileLines ? LINES_ITEM : 'oplens.hotFunction';
    item.command = {
      title: 'Go to the function',
      command: 'vscode.open',
      arguments: [vscode.Uri.parse(row.uri), { selection: new vscode.Range(row.line, 0, row.line, 0) } satisfies vscode.TextDocumentShowOptions],
    };
    return item;
  }

  getChildren(row?: HotRow): HotRow[] {
    return row ? [] : this.rows;
  }

  getParent(): undefined {
    return undefined;
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
