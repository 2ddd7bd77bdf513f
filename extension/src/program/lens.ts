/**
 * "▶ Profile in Program…" on each function's lens row, beside the server's "▶ Profile": the
 * functions are the server's (documents/documents.ts), and so is which of them have a lens row (`lens`,
 * the `oplens.lenses` setting: every function, those with a run, none); the command is the extension's
 * (Profile Function in Program…, with `{uri, qualname}`).
 *
 * VS Code glue: imports `vscode`.
 */

import * as vscode from 'vscode';
import { EXTENSION_COMMANDS } from '../../shared/names';
import type { Documents } from '../documents/documents';
import type { OpLensServer } from '../server/server';

export const PROGRAM_LENS_TITLE = '▶ Profile in Program…';

export class ProgramLenses implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly subscriptions: vscode.Disposable[];

  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(
    private readonly documents: Documents,
    server: OpLensServer,
  ) {
    this.subscriptions = [
      this.changed,
      documents.onDidChange(() => this.changed.fire()),
      server.onDidChangeState(() => this.changed.fire()),
      vscode.languages.registerCodeLensProvider({ scheme: 'file', language: 'python' }, this),
    ];
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const uri = doc.uri.toString();
    const info = this.documents.index.get(uri);
    if (!info) {
      this.documents.ensure(uri); // its change event brings the lenses
      return [];
    }
    return info.functions
      .filter((fn) => fn.lens && fn.firstLine >= 1 && fn.firstLine <= doc.lineCount)
      .map((fn) => {
        const at = new vscode.Range(fn.firstLine - 1, 0, fn.firstLine - 1, 0);
        return new vscode.CodeLens(at, {
          title: PROGRAM_LENS_TITLE,
          tooltip: `Run a program (a launch configuration, or a script you name) and profile ${fn.qualname} inside it`,
          command: EXTENSION_COMMANDS.profileInProgram,
          arguments: [{ uri, qualname: fn.qualname }],
        });
      });
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
  }
}
