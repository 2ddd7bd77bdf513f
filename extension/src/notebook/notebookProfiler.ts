/**
 * Profile Function inside a notebook cell: the function's arguments live in the notebook's kernel, so
 * the profile runs there, as the `%oplens` magic (server/oplens/notebook). The statement is asked for,
 * prefilled with the last call of the function in the notebook (notebookCall.ts). Where the Jupyter
 * extension is installed and the notebook's kernel is started, the magic runs in that kernel through
 * the Jupyter extension's kernel API (`kernels.getKernel(uri).executeCode`, typed by its published
 * `@vscode/jupyter-extension`); otherwise a message says what to run, with a button that inserts it as a cell. Either
 * way the kernel writes the run beside the notebook, and the server shows it on the cell and sends it
 * to be shown here (its lenses, hints, heat, and the results panel).
 *
 * VS Code glue: imports `vscode`; its model is notebookCall.ts.
 */

import type { Jupyter, Kernel } from '@vscode/jupyter-extension';
import * as vscode from 'vscode';
import { errorText, lastCall, magicCode, profilableInCell, runInCellMessage } from './notebookCall';

const JUPYTER_EXTENSION = 'ms-toolsai.jupyter';
const ERROR_MIME = 'application/vnd.code.notebook.error';
// stderr as VS Code names it (NotebookCellOutputItem.stderr), and as the API's typings write it
const STDERR_MIMES = new Set(['application/vnd.code.notebook.stderr', 'application/x.notebook.stream.stderr']);


export class NotebookProfiler {
  constructor(private readonly log: vscode.LogOutputChannel) {}

  /** Profile `qualname`, a function of the cell `cellUri`, in its notebook's kernel. */
  async profile(cellUri: vscode.Uri, qualname: string): Promise<void> {
    const notebook = vscode.workspace.notebookDocuments.find((nb) => nb.getCells().some((c) => c.document.uri.toString() === cellUri.toString()));
    if (!notebook) {
      void vscode.window.showInformationMessage('OpLens: open the notebook of this cell to profile its functions.');
      return;
    }
    if (!profilableInCell(qualname)) {
      void vscode.window.showInformationMessage('OpLens: a %%oplens cell is profiled when it runs: run the cell.');
      return;
    }
    const cells = notebook.getCells().filter((c) => c.kind === vscode.NotebookCellKind.Code).map((c) => c.document.getText());
    const found = lastCall(cells, qualname);
    const statement = await vscode.window.showInputBox({
      title: `OpLens: profile ${qualname} in the notebook's kernel`,
      prompt: `The statement to run (with the kernel's objects); ${qualname}'s lines are profiled while it runs`,
      value: found ?? `${qualname.split('.').pop() ?? qualname}()`,
      ignoreFocusOut: true,
    });
    if (!statement?.trim()) {
      return;
    }
    const code = magicCode(statement.trim(), qualname);
    const kernel = await this.kernel(notebook.uri);
    if (!kernel) {
      await this.tellWhatToRun(notebook, code);
      return;
    }
    await this.runInKernel(kernel, code, qualname);
  }

  /** The notebook's started kernel, through the Jupyter extension; undefined where there is none. */
  private async kernel(uri: vscode.Uri): Promise<Kernel | undefined> {
    const jupyter = vscode.extensions.getExtension<Jupyter | undefined>(JUPYTER_EXTENSION);
    if (!jupyter) {
      return undefined;
    }
    try {
      const api = jupyter.isActive ? jupyter.exports : await jupyter.activate();
      const kernel = await api?.kernels?.getKernel(uri);
      return kernel && kernel.status !== 'dead' ? kernel : undefined;
    } catch (e) {
      this.log.warn(`the Jupyter extension's kernel API: ${(e as Error).message}`);
      return undefined;
    }
  }

  private async runInKernel(kernel: Kernel, code: string, qualname: string): Promise<void> {
    const failures: string[] = [];
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `OpLens: profiling ${qualname} in the notebook's kernel…`, cancellable: true },
      async (_progress, token) => {
        try {
          for await (const output of kernel.executeCode(code, token)) {
            for (const item of output.items) {
              const text = new TextDecoder().decode(item.data);
              if (item.mime === ERROR_MIME) {
                failures.push(errorText(text));
              } else if (STDERR_MIMES.has(item.mime) && text.includes('UsageError')) {
                failures.push(text.trim()); // the magic's own line was wrong
              }
            }
          }
        } catch (e) {
          if (!(e instanceof vscode.CancellationError)) {
            failures.push((e as Error).message); // the kernel went away meanwhile
          }
        }
      },
    );
    if (failures.length > 0) {
      void vscode.window.showErrorMessage(`OpLens: ${qualname} in the kernel: ${failures.join(' · ')}`);
    }
  }

  /** No kernel to reach: what to run, and a button that puts it in a new cell at the notebook's end. */
  private async tellWhatToRun(notebook: vscode.NotebookDocument, code: string): Promise<void> {
    const insert = 'Insert Cell';
    const copy = 'Copy';
    const choice = await vscode.window.showInformationMessage(runInCellMessage(code), insert, copy);
    if (choice === copy) {
      await vscode.env.clipboard.writeText(code);
    } else if (choice === insert) {
      const cell = new vscode.NotebookCellData(vscode.NotebookCellKind.Code, code, 'python');
      const edit = new vscode.WorkspaceEdit();
      edit.set(notebook.uri, [vscode.NotebookEdit.insertCells(notebook.cellCount, [cell])]);
      await vscode.workspace.applyEdit(edit);
    }
  }
}
