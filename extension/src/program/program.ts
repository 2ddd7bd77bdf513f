/**
 * Profile Function in Program: which program to run, as the user already describes it.
 *
 * The program is what `oplens.profile` takes as `program` (the server runs it with the function
 * captured, `oplens run --target FILE::FN -- script.py ARGS`): a script path or a module, its
 * arguments, working directory and environment. It comes from one of
 *
 * - the workspace's Python launch configurations (launch.json: type `python` or `debugpy`, request
 *   `launch`, with `program` or `module`), their variables substituted as VS Code would;
 * - a line the user types: `path/to/script.py ARGS` or `-m package.module ARGS`, split like a shell;
 * - the `oplens.program` setting: such a line, or an object `{program | module, args, cwd, env}`.
 *
 * The last choice is remembered per workspace (`ProgramMemory`) and offered first.
 *
 * Pure: imports no `vscode`; unit-tested in program.test.ts.
 */

import * as path from 'node:path';
import type { KeyValueStore } from '../settings/memento';
import type { PathMap } from '../server/pathMap';

/** `oplens.profile`'s `program` argument. Exactly one of `program` (a script) and `module`. */
export interface ProgramSpec {
  program?: string;
  module?: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
}

/** What the variables of a launch configuration stand for. */
export interface VariableContext {
  /** The workspace folder's path (`${workspaceFolder}`). */
  workspaceFolder: string;
  /** The file of the function being profiled (`${file}`, `${fileDirname}`, ...). */
  file?: string;
  /** `${env:NAME}`; a name not set is the empty string, as in VS Code. */
  env: Record<string, string | undefined>;
  userHome?: string;
}

// ---- shell-like splitting -------------------------------------------------------------------

/**
 * `text` split into words as a POSIX shell splits a command line: blanks separate words, '…'
 * keeps everything literally, "…" keeps blanks (a backslash escapes `"`, `\`, `$` and a backquote
 * in it), a backslash outside quotes escapes the next character. An unclosed quote ends at the end.
 */
export function splitArgs(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === "'") {
      inWord = true;
      const end = text.indexOf("'", i + 1);
      word += text.slice(i + 1, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      inWord = true;
      for (i++; i < text.length && text[i] !== '"'; i++) {
        if (text[i] === '\\' && i + 1 < text.length && '"\\$`'.includes(text[i + 1] as string)) {
          i++;
        }
        word += text[i];
      }
    } else if (c === '\\' && i + 1 < text.length) {
      inWord = true;
      word += text[++i];
    } else if (/\s/.test(c)) {
      if (inWord) {
        words.push(word);
        word = '';
        inWord = false;
      }
    } else {
      inWord = true;
      word += c;
    }
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/** `words` as one line a shell would split back into them (for showing a program). */
export function joinArgs(words: readonly string[]): string {
  return words.map((w) => (w !== '' && /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}

// ---- variables --------------------------------------------------------------------------------

const VARIABLE = /\$\{([^}]*)\}/g;

/** `${command:pickArgs}`: the Python debugger asks for the arguments; OpLens asks too. */
export const PICK_ARGS = '${command:pickArgs}';

/**
 * `value` with VS Code's variables replaced: `${workspaceFolder}`, `${workspaceFolderBasename}`,
 * `${file}`, `${fileDirname}`, `${fileBasename}`, `${fileBasenameNoExtension}`, `${relativeFile}`,
 * `${userHome}`, `${pathSeparator}`, `${env:NAME}`. Others (`${input:…}`, `${command:…}`, a file
 * variable with no file) stay as written and are listed in `unresolved`.
 */
export function substitute(value: string, ctx: VariableContext): { text: string; unresolved: string[] } {
  const unresolved: string[] = [];
  const file = ctx.file;
  const text = value.replace(VARIABLE, (whole, name: string) => {
    if (name.startsWith('env:')) {
      return ctx.env[name.slice(4)] ?? '';
    }
    let out: string | undefined;
    switch (name) {
      case 'workspaceFolder':
      case 'workspaceRoot':
        out = ctx.workspaceFolder;
        break;
      case 'workspaceFolderBasename':
        out = path.basename(ctx.workspaceFolder);
        break;
      case 'file':
        out = file;
        break;
      case 'fileDirname':
        out = file && path.dirname(file);
        break;
      case 'fileBasename':
        out = file && path.basename(file);
        break;
      case 'fileBasenameNoExtension':
        out = file && path.basename(file, path.extname(file));
        break;
      case 'relativeFile':
        out = file && path.relative(ctx.workspaceFolder, file);
        break;
      case 'userHome':
        out = ctx.userHome;
        break;
      case 'pathSeparator':
        out = path.sep;
        break;
    }
    if (out === undefined) {
      unresolved.push(whole);
      return whole;
    }
    return out;
  });
  return { text, unresolved };
}

// ---- launch configurations -------------------------------------------------------------------

/** A Python launch configuration, ready to run. */
export interface LaunchChoice {
  /** The configuration's `name`. */
  name: string;
  spec: ProgramSpec;
  /** `args` is `${command:pickArgs}`: ask the user for the arguments. */
  asksArgs: boolean;
  /** Variables OpLens cannot resolve (`${input:…}`, …): the configuration cannot run as is. */
  unresolved: string[];
  /** What of the configuration OpLens does not use (`python`, `envFile`), for its description. */
  ignored: string[];
}

/** A configuration that is not offered, and why (for the log). */
export interface SkippedConfiguration {
  name: string;
  why: string;
}

const PYTHON_TYPES = ['python', 'debugpy'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The Python launch configurations among `launch.configurations` (each `type` python or debugpy,
 * `request` launch, with `program` or `module`), variables substituted. A module such as
 * `torch.distributed.run` (torchrun) is kept as is: the server runs what the user runs.
 */
export function launchChoices(configurations: unknown, ctx: VariableContext): { choices: LaunchChoice[]; skipped: SkippedConfiguration[] } {
  const choices: LaunchChoice[] = [];
  const skipped: SkippedConfiguration[] = [];
  if (!Array.isArray(configurations)) {
    return { choices, skipped };
  }
  configurations.forEach((raw, i) => {
    if (!isObj(raw)) {
      return;
    }
    const name = typeof raw.name === 'string' && raw.name.trim() ? raw.name.trim() : `configuration ${i + 1}`;
    if (!PYTHON_TYPES.includes(String(raw.type))) {
      skipped.push({ name, why: `type ${JSON.stringify(raw.type ?? null)} is not python or debugpy` });
      return;
    }
    if (raw.request !== 'launch') {
      skipped.push({ name, why: `request ${JSON.stringify(raw.request ?? null)}: OpLens runs programs, it does not attach` });
      return;
    }
    const result = fromLaunchConfiguration(raw, ctx);
    if (typeof result === 'string') {
      skipped.push({ name, why: result });
      return;
    }
    choices.push({ name, ...result });
  });
  return { choices, skipped };
}

/** One configuration (or the `oplens.program` object) as a program, or why it is not one. */
function fromLaunchConfiguration(raw: Obj, ctx: VariableContext): Omit<LaunchChoice, 'name'> | string {
  const unresolved: string[] = [];
  const sub = (v: string): string => {
    const r = substitute(v, ctx);
    unresolved.push(...r.unresolved);
    return r.text;
  };
  const spec: ProgramSpec = {};
  const program = typeof raw.program === 'string' ? raw.program.trim() : '';
  const module = typeof raw.module === 'string' ? raw.module.trim() : '';
  if (module) {
    spec.module = sub(module);
  } else if (program) {
    spec.program = sub(program);
  } else {
    return 'it has neither "program" nor "module"';
  }
  let asksArgs = false;
  let words: string[] = [];
  if (Array.isArray(raw.args)) {
    words = raw.args.map(String);
  } else if (typeof raw.args === 'string') {
    if (raw.args.trim() === PICK_ARGS) {
      asksArgs = true;
    } else {
      words = splitArgs(raw.args);
    }
  } else if (raw.args !== undefined && raw.args !== null) {
    return '"args" is neither a list nor a string';
  }
  spec.args = words.map(sub);
  if (typeof raw.cwd === 'string' && raw.cwd.trim()) {
    spec.cwd = sub(raw.cwd.trim());
  }
  if (isObj(raw.env)) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw.env)) {
      if (v !== null && v !== undefined) {
        env[k] = sub(String(v));
      }
    }
    if (Object.keys(env).length) {
      spec.env = env;
    }
  }
  const ignored = ['python', 'envFile', 'pythonArgs'].filter((k) => raw[k] !== undefined);
  return { spec, asksArgs, unresolved: [...new Set(unresolved)], ignored };
}

// ---- a typed line and the oplens.program setting --------------------------------------------

const MODULE_NAME = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/;
const PYTHON_WORD = /(^|[\\/])python(\d+(\.\d+)?)?(\.exe)?$/i;

/**
 * A typed line, `path/to/script.py ARGS` or `-m package.module ARGS` (a leading `python` is
 * allowed and dropped), as a program; or a message saying what is wrong with it.
 */
export function parseProgramLine(line: string, ctx?: VariableContext): ProgramSpec | string {
  let words = splitArgs(line);
  if (words.length > 0 && PYTHON_WORD.test(words[0] as string)) {
    words = words.slice(1);
  }
  if (ctx) {
    words = words.map((w) => substitute(w, ctx).text);
  }
  const [first, ...rest] = words;
  if (first === undefined || first === '') {
    return 'give a script and its arguments (train.py --steps 30) or a module (-m package.module ARGS)';
  }
  if (first === '-m') {
    const [module, ...args] = rest;
    if (!module) {
      return 'name the module after -m (-m package.module ARGS)';
    }
    if (!MODULE_NAME.test(module)) {
      return `"${module}" is not a module name: write it as Python imports it (-m package.module)`;
    }
    return { module, args };
  }
  if (first.startsWith('-')) {
    return `${first}: OpLens takes a script (train.py ARGS) or -m package.module ARGS, not interpreter options`;
  }
  return { program: first, args: rest };
}

/** The `oplens.program` setting: undefined when unset, else a program or a message saying what is wrong. */
export function programFromSetting(raw: unknown, ctx: VariableContext): ProgramSpec | string | undefined {
  if (raw === undefined || raw === null || raw === '' || (isObj(raw) && Object.keys(raw).length === 0)) {
    return undefined;
  }
  if (typeof raw === 'string') {
    return parseProgramLine(raw, ctx);
  }
  if (!isObj(raw)) {
    return 'oplens.program should be a line (train.py ARGS, or -m package.module ARGS) or an object {program | module, args, cwd, env}';
  }
  const result = fromLaunchConfiguration(raw, ctx);
  if (typeof result === 'string') {
    return `oplens.program: ${result}`;
  }
  if (result.unresolved.length) {
    return `oplens.program uses ${result.unresolved.join(', ')}, which OpLens cannot resolve`;
  }
  return result.spec;
}

/**
 * The program as a command line: `train.py --steps 30`, `-m torch.distributed.run --nproc-per-node 2 train.py`;
 * a script inside `folder` (the workspace folder) relative to it.
 */
export function describeProgram(spec: ProgramSpec, folder?: string): string {
  const head = spec.module !== undefined ? ['-m', spec.module] : [shortPath(spec.program ?? '', folder)];
  return joinArgs([...head, ...(spec.args ?? [])]);
}

/** `p` relative to `folder` when inside it (`.` for the folder itself), else as it is. */
export function shortPath(p: string, folder?: string): string {
  if (!folder || !path.isAbsolute(p)) {
    return p;
  }
  const rel = path.relative(folder, p);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? p : rel;
}

/**
 * The program's arguments and environment values that are paths of this editor's as the server
 * host names them (`oplens.pathMappings`). The script and the working directory go as they are:
 * the server maps those itself, as it maps every document URI. Relative paths stay relative.
 */
export function programForHost(spec: ProgramSpec, map: PathMap): ProgramSpec {
  if (map.empty) {
    return spec;
  }
  const out: ProgramSpec = { ...spec };
  if (spec.args) {
    out.args = spec.args.map((a) => map.toHost(a));
  }
  if (spec.env) {
    out.env = Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, map.toHost(v)]));
  }
  return out;
}

// ---- the remembered choice and the picker's items ---------------------------------------------

/** What the user chose last: a launch configuration (by name, read anew each time) or a typed line. */
export type ProgramChoice = { kind: 'launch'; name: string } | { kind: 'line'; line: string };

export const PROGRAM_STATE_KEY = 'oplens.program';

export class ProgramMemory {
  constructor(private readonly store: KeyValueStore) {}

  get(): ProgramChoice | undefined {
    const raw = this.store.get<unknown>(PROGRAM_STATE_KEY);
    if (isObj(raw)) {
      if (raw.kind === 'launch' && typeof raw.name === 'string') {
        return { kind: 'launch', name: raw.name };
      }
      if (raw.kind === 'line' && typeof raw.line === 'string') {
        return { kind: 'line', line: raw.line };
      }
    }
    return undefined;
  }

  async remember(choice: ProgramChoice): Promise<void> {
    await this.store.update(PROGRAM_STATE_KEY, choice);
  }
}

/** One row of the program picker. */
export type PickItem =
  | { kind: 'launch'; label: string; description: string; detail: string; choice: LaunchChoice }
  | { kind: 'line'; label: string; description: string; detail: string; line: string }
  | { kind: 'setting'; label: string; description: string; detail: string; spec: ProgramSpec }
  | { kind: 'enter'; label: string; description: string; detail: string };

/**
 * The picker's rows: the remembered choice first (marked "last used"), else the `oplens.program`
 * setting first; then the launch configurations, then "Enter a script or module…".
 */
export function programPickItems(options: {
  launch: readonly LaunchChoice[];
  remembered?: ProgramChoice;
  setting?: ProgramSpec;
  /** The workspace folder: paths inside it are shown relative to it. */
  folder?: string;
}): PickItem[] {
  const { launch, remembered, setting, folder } = options;
  const where = (cwd: string | undefined): string => (cwd && shortPath(cwd, folder) !== '.' ? `in ${shortPath(cwd, folder)}` : '');
  const launchItem = (c: LaunchChoice, last: boolean): PickItem => {
    const notes = [last ? 'last used' : '', 'launch.json'];
    if (c.unresolved.length) {
      notes.push(`uses ${c.unresolved.join(', ')}`);
    }
    if (c.ignored.length) {
      notes.push(`its ${c.ignored.join(', ')} not used`); // the server's interpreter runs the program
    }
    const line = c.asksArgs ? `${describeProgram(c.spec, folder)} (arguments asked)` : describeProgram(c.spec, folder);
    const cwd = where(c.spec.cwd);
    return { kind: 'launch', label: c.name, description: notes.filter(Boolean).join(' · '), detail: cwd ? `${line}  ·  ${cwd}` : line, choice: c };
  };
  const items: PickItem[] = [];
  const rememberedLaunch = remembered?.kind === 'launch' ? launch.find((c) => c.name === remembered.name) : undefined;
  if (rememberedLaunch) {
    items.push(launchItem(rememberedLaunch, true));
  } else if (remembered?.kind === 'line') {
    items.push({ kind: 'line', label: remembered.line, description: 'last used', detail: 'entered', line: remembered.line });
  }
  const settingItem: PickItem | undefined = setting
    ? { kind: 'setting', label: describeProgram(setting, folder), description: 'oplens.program setting', detail: where(setting.cwd), spec: setting }
    : undefined;
  if (settingItem && items.length === 0) {
    items.push(settingItem);
  }
  for (const c of launch) {
    if (c !== rememberedLaunch) {
      items.push(launchItem(c, false));
    }
  }
  if (settingItem && !items.includes(settingItem)) {
    items.push(settingItem);
  }
  items.push({ kind: 'enter', label: 'Enter a script or module…', description: '', detail: 'path/to/script.py ARGS, or -m package.module ARGS' });
  return items;
}

// ---- a program the server sends ---------------------------------------------------------------

/**
 * The `program` of a server's lens argument (`▶ lines` of a program overview: the overview's program,
 * in this editor's paths), checked; undefined where it is not one.
 */
export function programFromServer(v: unknown): ProgramSpec | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    return undefined;
  }
  const o = v as Record<string, unknown>;
  const spec: ProgramSpec = {};
  if (typeof o.module === 'string' && o.module) {
    spec.module = o.module;
  } else if (typeof o.program === 'string' && o.program) {
    spec.program = o.program;
  } else {
    return undefined;
  }
  if (Array.isArray(o.args)) {
    if (!o.args.every((a): a is string => typeof a === 'string')) {
      return undefined;
    }
    spec.args = [...o.args];
  }
  if (typeof o.cwd === 'string' && o.cwd) {
    spec.cwd = o.cwd;
  }
  if (typeof o.env === 'object' && o.env !== null && !Array.isArray(o.env)) {
    spec.env = Object.fromEntries(Object.entries(o.env as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string'));
  }
  return spec;
}

// ---- where the program runs: the server's host, or a Slurm job ----------------------------------

/** The last choice of where a program runs, per workspace: a Slurm job with its sbatch options, or the host. */
export interface SlurmChoice {
  slurm: boolean;
  /** The sbatch options as typed (`-N2 --partition trn2 --time 30`). */
  options: string;
}

export const SLURM_STATE_KEY = 'oplens.slurmJob';

export class SlurmMemory {
  constructor(private readonly store: KeyValueStore) {}

  get(): SlurmChoice | undefined {
    const raw = this.store.get<unknown>(SLURM_STATE_KEY);
    return isObj(raw) && typeof raw.slurm === 'boolean' && typeof raw.options === 'string' ? { slurm: raw.slurm, options: raw.options } : undefined;
  }

  async remember(choice: SlurmChoice): Promise<void> {
    await this.store.update(SLURM_STATE_KEY, choice);
  }
}

/** One row of "where does it run": the server's host, or a Slurm job. */
export interface WhereItem {
  slurm: boolean;
  label: string;
  description: string;
  detail: string;
}

/** The rows, the remembered one first; `sbatch`: the server host's sbatch (its path). */
export function whereItems(remembered: SlurmChoice | undefined, sbatch: string): WhereItem[] {
  const here: WhereItem = { slurm: false, label: 'On the server’s host', description: '', detail: 'the program runs where the OpLens server runs' };
  const job: WhereItem = {
    slurm: true,
    label: 'As a Slurm job…',
    description: remembered?.options ? `sbatch ${remembered.options}` : '',
    detail: `submitted with ${sbatch}: one OpLens per node, the nodes' parts merged into one run`,
  };
  return remembered?.slurm ? [job, here] : [here, job];
}

/** The sbatch options as typed, split like a shell; a message where they name no option (a stray word first). */
export function sbatchOptions(text: string): string[] | string {
  const words = splitArgs(text.trim());
  if (words.length > 0 && !words[0].startsWith('-')) {
    return `"${words[0]}" is not an sbatch option: write options such as -N2 --partition trn2 --time 30`;
  }
  return words;
}
