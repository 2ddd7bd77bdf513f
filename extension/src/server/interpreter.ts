/**
 * Which Python runs the server: `oplens.pythonPath` when set; else the interpreter selected in the
 * Python extension (through `@vscode/python-extension`); else `python3`. Everything works without
 * the Python extension: it is looked up, never required, and its API is only loaded when present.
 *
 * VS Code glue: imports `vscode`.
 */

import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';
import { expandPath } from '../settings/source';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

export interface Interpreter {
  /** The executable to spawn. */
  command: string;
  /** Where the choice came from, for messages. */
  origin: string;
  /** The Python extension is installed (so "Select Interpreter" can be offered). */
  pythonExtension: boolean;
}

export class InterpreterChooser implements vscode.Disposable {
  private api: PythonExtension | undefined;
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly changeEmitter = new vscode.EventEmitter<void>();
  /** The Python extension's selection changed (matters only when oplens.pythonPath is empty). */
  readonly onDidChange = this.changeEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  get pythonExtensionInstalled(): boolean {
    return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
  }

  private async pythonApi(): Promise<PythonExtension | undefined> {
    if (this.api || !this.pythonExtensionInstalled) {
      return this.api;
    }
    try {
      this.api = await PythonExtension.api();
      this.subscriptions.push(this.api.environments.onDidChangeActiveEnvironmentPath(() => this.changeEmitter.fire()));
    } catch (e) {
      this.log.warn(`the Python extension is installed but its API is not available: ${(e as Error).message}`);
    }
    return this.api;
  }

  async choose(pythonPath: string, resource: vscode.Uri | undefined): Promise<Interpreter> {
    const pythonExtension = this.pythonExtensionInstalled;
    if (pythonPath) {
      return { command: expandPath(pythonPath), origin: 'oplens.pythonPath', pythonExtension };
    }
    const api = await this.pythonApi();
    if (api) {
      try {
        const active = api.environments.getActiveEnvironmentPath(resource);
        const resolved = await api.environments.resolveEnvironment(active);
        const executable = resolved?.executable.uri?.fsPath ?? active.path;
        if (executable) {
          return { command: executable, origin: 'the interpreter selected in the Python extension', pythonExtension };
        }
      } catch (e) {
        this.log.warn(`could not read the Python extension's interpreter: ${(e as Error).message}`);
      }
    }
    const fallback = process.platform === 'win32' ? 'python' : 'python3';
    return {
      command: fallback,
      origin: pythonExtension ? 'the default; the Python extension has no interpreter selected' : 'the default; set oplens.pythonPath to choose',
      pythonExtension,
    };
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    this.changeEmitter.dispose();
  }
}
