/**
 * Just enough of Python's syntax to find functions in a buffer the user is typing in, with no
 * Python process: which function encloses the cursor, its qualname, how many positional arguments
 * it needs, and whether a run still matches its text.
 *
 * It follows the server's rules (`server/oplens/engine/target.py`, from the AST): a function's
 * first line is its first decorator; qualnames join the enclosing classes and functions with dots
 * (`Block.forward`, `outer.inner`); only functions directly in the module, a class or a function
 * are listed (the AST walk does not enter `if`/`try` blocks); a run is fresh while the sha256 of its
 * lines (joined by "\n", split as `str.splitlines` does) is unchanged.
 *
 * A small tokenizer is enough for that: strings (triple-quoted ones span lines), comments, brackets
 * and backslash continuations decide where logical lines start, and indentation nests them.
 */

import { createHash } from 'node:crypto';

export interface PyFunction {
  qualname: string;
  name: string;
  /** 1-based: the first decorator, or the `def`. */
  firstLine: number;
  defLine: number;
  /** 1-based: the last line of the body. */
  lastLine: number;
  /** Positional parameters without a default (`self` included), as the server counts them. */
  requiredParams: number;
  /** The parameter list as written, e.g. `x: torch.Tensor, w: torch.Tensor`. */
  params: string;
  inClass: boolean;
}

interface LogicalLine {
  start: number; // 0-based physical line
  end: number; // 0-based physical line where it ends
  indent: number;
  text: string; // the code of the logical line, comments removed, physical lines joined by "\n"
}

/** Physical lines as VS Code and Python's tokenizer count them (\n, \r\n, \r). */
export function physicalLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** `str.splitlines()`: Python also breaks lines at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029. */
export function pySplitLines(text: string): string[] {
  const lines = text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  if (lines.length > 0 && lines[lines.length - 1] === '') {
    lines.pop(); // splitlines() drops the empty string after a final line break
  }
  return lines;
}

function indentWidth(line: string): number {
  let width = 0;
  for (const ch of line) {
    if (ch === ' ') {
      width += 1;
    } else if (ch === '\t') {
      width = (Math.floor(width / 8) + 1) * 8;
    } else if (ch === '\f') {
      width = 0;
    } else {
      break;
    }
  }
  return width;
}

/** Split source into logical lines (statements' lines), skipping blank and comment-only lines. */
export function logicalLines(text: string): LogicalLine[] {
  const lines = physicalLines(text);
  const out: LogicalLine[] = [];
  let current: LogicalLine | undefined;
  let depth = 0; // open brackets
  let quote = ''; // the open string's delimiter: ', ", ''' or """
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n] ?? '';
    let i = 0;
    if (!current) {
      const trimmed = line.trimStart();
      if (trimmed === '' || trimmed.startsWith('#')) {
        continue;
      }
      current = { start: n, end: n, indent: indentWidth(line), text: '' };
      i = line.length - trimmed.length;
    }
    let code = '';
    let continued = false;
    while (i < line.length) {
      const ch = line[i] ?? '';
      if (quote) {
        if (ch === '\\') {
          code += line.slice(i, i + 2);
          i += 2;
          continue;
        }
        if (line.startsWith(quote, i)) {
          code += quote;
          i += quote.length;
          quote = '';
          continue;
        }
        code += ch;
        i += 1;
        continue;
      }
      if (ch === '#') {
        break;
      }
      if (ch === '"' || ch === "'") {
        quote = line.startsWith(ch.repeat(3), i) ? ch.repeat(3) : ch;
        code += quote;
        i += quote.length;
        continue;
      }
      if (ch === '\\' && i === line.length - 1) {
        continued = true;
        i += 1;
        continue;
      }
      if ('([{'.includes(ch)) {
        depth += 1;
      } else if (')]}'.includes(ch)) {
        depth = Math.max(0, depth - 1);
      }
      code += ch;
      i += 1;
    }
    if (quote.length === 1) {
      quote = ''; // an unterminated one-line string ends with its line (a syntax error while typing)
    }
    current.text += (current.text ? '\n' : '') + code;
    current.end = n;
    if (!quote && depth === 0 && !continued) {
      out.push(current);
      current = undefined;
    }
  }
  if (current) {
    out.push(current); // an unclosed bracket or string at the end of the buffer
  }
  return out;
}

const DEF = /^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(/;
const CLASS = /^class\s+([A-Za-z_]\w*)/;

/** Split `text` at top-level commas (outside brackets and strings). */
function splitTopLevel(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (quote) {
      if (ch === '\\') {
        i += 1;
      } else if (text.startsWith(quote, i)) {
        i += quote.length - 1;
        quote = '';
      }
      continue;
    }
    if (ch === '"' || ch === "'") {
      quote = text.startsWith(ch.repeat(3), i) ? ch.repeat(3) : ch;
      i += quote.length - 1;
    } else if ('([{'.includes(ch)) {
      depth += 1;
    } else if (')]}'.includes(ch)) {
      depth -= 1;
    } else if (ch === sep && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

/** The text between the `(` that opens a def's parameters and its matching `)`. */
function parameterText(defText: string): string {
  const open = defText.indexOf('(');
  if (open < 0) {
    return '';
  }
  let depth = 0;
  let quote = '';
  for (let i = open; i < defText.length; i++) {
    const ch = defText[i] ?? '';
    if (quote) {
      if (ch === '\\') {
        i += 1;
      } else if (defText.startsWith(quote, i)) {
        i += quote.length - 1;
        quote = '';
      }
    } else if (ch === '"' || ch === "'") {
      quote = defText.startsWith(ch.repeat(3), i) ? ch.repeat(3) : ch;
      i += quote.length - 1;
    } else if ('([{'.includes(ch)) {
      depth += 1;
    } else if (')]}'.includes(ch)) {
      depth -= 1;
      if (depth === 0) {
        return defText.slice(open + 1, i).trim();
      }
    }
  }
  return defText.slice(open + 1).trim(); // unclosed while typing
}

/** Positional parameters without a default, as `ast.arguments` counts them (`self` included). */
export function requiredPositional(params: string): number {
  let required = 0;
  for (const raw of splitTopLevel(params, ',')) {
    const p = raw.trim();
    if (p === '' || p === '/') {
      continue;
    }
    if (p.startsWith('*')) {
      break; // `*`, `*args` and `**kwargs` end the positional parameters
    }
    const hasDefault = splitTopLevel(p, '=').length > 1;
    if (!hasDefault) {
      required += 1;
    }
  }
  return required;
}

/** Every function the server would list, in source order. */
export function listFunctions(text: string): PyFunction[] {
  const logical = logicalLines(text);
  const found: PyFunction[] = [];
  // enclosing blocks: every earlier logical line with a smaller indent, innermost last
  const stack: { indent: number; kind: 'def' | 'class' | 'other'; name: string; listed: boolean }[] = [];
  let decoratorStart: number | undefined;
  for (let k = 0; k < logical.length; k++) {
    const line = logical[k];
    if (!line) {
      continue;
    }
    while (stack.length > 0 && (stack[stack.length - 1]?.indent ?? 0) >= line.indent) {
      stack.pop();
    }
    const parent = stack[stack.length - 1];
    // the AST walk enters only the module, classes and functions
    const reachable = parent === undefined || (parent.kind !== 'other' && parent.listed);
    const prefix = stack
      .filter((s) => s.kind !== 'other')
      .map((s) => s.name + '.')
      .join('');
    if (line.text.startsWith('@')) {
      decoratorStart ??= line.start; // a decorator opens no block: it belongs to the next def or class
      continue;
    }
    const def = DEF.exec(line.text);
    const cls = def ? null : CLASS.exec(line.text);
    if (def) {
      const name = def[1] ?? '';
      // the body: following logical lines indented deeper than the def
      let last = line.end;
      for (let j = k + 1; j < logical.length && (logical[j]?.indent ?? 0) > line.indent; j++) {
        last = logical[j]?.end ?? last;
      }
      const params = parameterText(line.text);
      if (reachable) {
        found.push({
          qualname: prefix + name,
          name,
          firstLine: (decoratorStart ?? line.start) + 1,
          defLine: line.start + 1,
          lastLine: last + 1,
          requiredParams: requiredPositional(params),
          params: params.replace(/\s*\n\s*/g, ' '),
          inClass: parent?.kind === 'class',
        });
      }
      stack.push({ indent: line.indent, kind: 'def', name, listed: reachable });
    } else if (cls) {
      stack.push({ indent: line.indent, kind: 'class', name: cls[1] ?? '', listed: reachable });
    } else {
      stack.push({ indent: line.indent, kind: 'other', name: '', listed: false });
    }
    decoratorStart = undefined;
  }
  return found;
}

/** The innermost listed function whose lines (decorators included) hold the 1-based `line`. */
export function enclosingFunction(functions: readonly PyFunction[], line: number): PyFunction | undefined {
  let best: PyFunction | undefined;
  for (const fn of functions) {
    if (fn.firstLine <= line && line <= fn.lastLine && (!best || fn.firstLine >= best.firstLine)) {
      best = fn;
    }
  }
  return best;
}

/** Names of the module's top-level functions (for input factories such as `make_inputs`). */
export function topLevelFunctionNames(functions: readonly PyFunction[]): string[] {
  return functions.filter((f) => !f.qualname.includes('.')).map((f) => f.name);
}

/** `source_sha256`: the hash of lines `first`..`last` (1-based) as the server computes it. */
export function sourceSha256(text: string, first: number, last: number): string {
  const lines = pySplitLines(text).slice(first - 1, last);
  return createHash('sha256').update(lines.join('\n'), 'utf8').digest('hex');
}

/**
 * Where a run's lines are in the current text: `shift` to add to each profiled line number, or
 * undefined when the function is gone or its text changed since it was profiled (the server's lens
 * then says "stale", and the extension draws no heat for it).
 */
export function placeRun(
  text: string,
  functions: readonly PyFunction[],
  target: { qualname: string; first_line: number; last_line: number; source_sha256: string },
): { shift: number } | undefined {
  const wanted = target.qualname.replace(/\.<locals>\./g, '.');
  const fn = functions.find((f) => f.qualname === wanted);
  if (!fn) {
    return undefined;
  }
  const length = target.last_line - target.first_line;
  if (sourceSha256(text, fn.firstLine, fn.firstLine + length) !== target.source_sha256) {
    return undefined;
  }
  return { shift: fn.firstLine - target.first_line };
}
