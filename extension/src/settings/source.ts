/**
 * The `oplens.*` settings as a typed, live value: read through `settings.ts` (bad values fall
 * back to defaults with a warning), with one event for changes that need a new server and one for
 * everything else.
 *
 * VS Code glue: imports `vscode`; its model is settings.ts.
 */

import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { SETTINGS_SECTION } from '../../shared/names';
import { readSettings, RESTART_KEYS, type Settings } from './settings';

export class SettingsSource implements vscode.Disposable {
  private current: Settings;
  private readonly restartEmitter = new vscode.EventEmitter<void>();
  private readonly changeEmitter = new vscode.EventEmitter<Settings>();
  private readonly subscription: vscode.Disposable;
  private lastProblems = '';

  /** A setting read at server start changed: the server must restart to use it. */
  readonly onDidChangeRestartSettings = this.restartEmitter.event;
  /** Any `oplens.*` setting changed. */
  readonly onDidChange = this.changeEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.current = this.read();
    this.subscription = vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(SETTINGS_SECTION)) {
        return;
      }
      this.current = this.read();
      this.changeEmitter.fire(this.current);
      if (RESTART_KEYS.some((key) => e.affectsConfiguration(key))) {
        this.restartEmitter.fire();
      }
    });
  }

  get value(): Settings {
    return this.current;
  }

  private read(): Settings {
    const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
    const { settings, problems } = readSettings((key) => config.get(key));
    const text = problems.join('; ');
    if (text && text !== this.lastProblems) {
      this.log.warn(`settings: ${text}`);
      void vscode.window.showWarningMessage(`OpLens settings: ${text}`, 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', SETTINGS_SECTION);
        }
      });
    }
    this.lastProblems = text;
    return settings;
  }

  dispose(): void {
    this.subscription.dispose();
    this.restartEmitter.dispose();
    this.changeEmitter.dispose();
  }
}

/** The first workspace folder: where the server runs and runs are kept (`.oplens/runs`). */
export function workspaceRoot(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

/** `~` and `${workspaceFolder}` in a path setting; a relative path is relative to the workspace. */
export function expandPath(value: string): string {
  if (!value) {
    return value;
  }
  const root = workspaceRoot()?.uri.fsPath ?? '';
  let out = value.replace(/\$\{workspaceFolder\}/g, root).replace(/\$\{userHome\}/g, os.homedir());
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(os.homedir(), out.slice(1));
  }
  if (!path.isAbsolute(out) && root && (out.includes('/') || out.includes(path.sep))) {
    out = path.join(root, out);
  }
  return out;
}
