/**
 * Profile Function in a notebook cell: what to run in the notebook's kernel. The function's arguments
 * are the kernel's live objects, so the statement is a call as the notebook writes it: the last call of
 * the function found in the notebook's cells (prefilled in the input box), run by the `%oplens` magic.
 *
 * Pure: imports no `vscode`; unit-tested in notebookCall.test.ts.
 */

import { CELL_QUALNAME } from '../../shared/names';

/** A notebook cell open in VS Code: its URI names the notebook, the cell in the fragment. */
export const CELL_SCHEME = 'vscode-notebook-cell';

export function isCellUri(uri: string): boolean {
  return uri.startsWith(`${CELL_SCHEME}:`);
}

/** Whether a cell's run can be asked for from the editor (a `%%oplens` cell profiles itself when it runs). */
export function profilableInCell(qualname: string): boolean {
  return qualname !== CELL_QUALNAME;
}

const MAGIC = /^%oplens\b((?:\s+(?:-f|--function|--iters|--warmup|--profiler-warmup|--backend|--out|--notebook)(?:\s+|=)\S+)*)\s+(.+)$/;

/**
 * The last statement in `cells` (in notebook order) that calls `qualname`'s function by its name, as a
 * `%oplens` statement: a line that calls it (`y = rmsnorm(x, w)`), or the statement of an earlier
 * `%oplens` line that did. Definitions, comments and other magics are not calls. Undefined where none does.
 */
export function lastCall(cells: string[], qualname: string): string | undefined {
  const call = callOf(qualname);
  for (let c = cells.length - 1; c >= 0; c--) {
    const lines = (cells[c] ?? '').split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = (lines[i] ?? '').trim();
      const magic = MAGIC.exec(line);
      const statement = magic ? (magic[2] ?? '') : line;
      if (/^(def|async\s+def|class)\s/.test(statement) || statement.startsWith('#') || (!magic && /^[%!]/.test(statement))) {
        continue;
      }
      if (call.test(statement.replace(/#.*$/, ''))) {
        return statement;
      }
    }
  }
  return undefined;
}

/** The cell's code that runs `statement` under the magic, the function named where the statement calls another. */
export function magicCode(statement: string, qualname: string): string {
  const target = !callOf(qualname).test(statement) && !qualname.includes('.') ? `-f ${qualname} ` : '';
  return `%load_ext oplens\n%oplens ${target}${statement}`;
}

/** What to type when no kernel can be reached: the magic, one line per cell line. */
export function runInCellMessage(code: string): string {
  return `OpLens: run this in a cell of the notebook (its kernel has the live objects): ${code.split('\n').join(' ; ')}`;
}

/** The text of a kernel's error output (the Jupyter API's `application/vnd.code.notebook.error` item: `{name, message}`). */
export function errorText(data: string): string {
  try {
    const e = JSON.parse(data) as { name?: unknown; message?: unknown };
    return [e.name, e.message].filter((p) => typeof p === 'string' && p).join(': ') || data;
  } catch {
    return data;
  }
}

/** A call of the function by its name: a method's after a `.` (`block.attend(`), a function's not (`model.rmsnorm(` is another). */
function callOf(qualname: string): RegExp {
  const name = qualname.split('.').pop() ?? qualname;
  return new RegExp(`(^|[^\\w${qualname.includes('.') ? '' : '.'}])${escape(name)}\\s*\\(`);
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
