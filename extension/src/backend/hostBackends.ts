/**
 * The backends of the server's host (`oplens.backends`, the server's words): what `auto` picks there before
 * any run (the status bar's `AUTO→CPU`), each backend present or what it lacks (the backend pick), and the
 * host's interpreters that could run a backend the server's cannot (the offer to switch to a Neuron venv).
 *
 * Pure: imports no `vscode`; unit-tested in hostBackends.test.ts.
 */

import { RunParseError } from '../../shared/reader';

export interface ChosenBackend {
  name: string;
  title: string;
  deviceLabel: string;
  deviceName: string;
  /** Why `auto` chose it ("auto fell back to the CPU (neuron: …; cuda: …)"); "" for a backend asked by name. */
  note: string;
}

export interface BackendRow {
  /** `auto`, then each backend. */
  name: string;
  title: string;
  available: boolean;
  /** "present: NVIDIA H100", "torch_neuronx is not installed", auto's "…: CPU here". */
  detail: string;
}

export interface InterpreterAdvice {
  backend: string;
  /** The offer, in the server's words. */
  message: string;
  /** The interpreters offered, best first (host paths). */
  pythons: string[];
}

export interface HostBackends {
  /** The backend asked about (the `oplens.backend` setting). */
  requested: string;
  /** What it ends on here; null where it cannot run (`problem` says why). */
  chosen: ChosenBackend | null;
  problem: string;
  backends: BackendRow[];
  interpreters: InterpreterAdvice[];
}

type Obj = Record<string, unknown>;
const str = (o: Obj, key: string): string => (typeof o[key] === 'string' ? (o[key] as string) : '');
const obj = (v: unknown, where: string): Obj => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new RunParseError(`oplens.backends ${where}`, 'is not an object');
  }
  return v as Obj;
};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The answer of `oplens.backends`, checked (unknown fields ignored, missing lists empty). */
export function parseHostBackends(raw: unknown): HostBackends {
  const o = obj(raw, 'the answer');
  const c = o.chosen === null || o.chosen === undefined ? null : obj(o.chosen, 'chosen');
  return {
    requested: str(o, 'requested'),
    chosen: c && { name: str(c, 'name'), title: str(c, 'title'), deviceLabel: str(c, 'device_label'), deviceName: str(c, 'device_name'), note: str(c, 'note') },
    problem: str(o, 'problem'),
    backends: list(o.backends).map((b, i) => {
      const r = obj(b, `backends[${i}]`);
      return { name: str(r, 'name'), title: str(r, 'title'), available: r.available === true, detail: str(r, 'detail') };
    }),
    interpreters: list(o.interpreters).map((a, i) => {
      const r = obj(a, `interpreters[${i}]`);
      return { backend: str(r, 'backend'), message: str(r, 'message'), pythons: list(r.pythons).filter((p): p is string => typeof p === 'string') };
    }),
  };
}

/** The device label the status bar puts after `AUTO→` (what auto picks on the host), if the answer is for `setting`. */
export function chosenLabel(report: HostBackends | undefined, setting: string): string | undefined {
  return report && report.requested === setting ? report.chosen?.deviceLabel : undefined;
}

export interface BackendPickItem {
  label: string;
  description?: string;
  detail?: string;
  backend: string;
}

/** The backend pick: `auto` first, then each backend, present or what it lacks (the server's words), the current one marked. */
export function backendPickItems(report: HostBackends | undefined, names: readonly string[], setting: string): BackendPickItem[] {
  const rows = new Map((report?.backends ?? []).map((r) => [r.name, r]));
  return names.map((name) => {
    const row = rows.get(name);
    const mark = name === setting ? '$(check) ' : '';
    const icon = !row ? '' : row.available ? '' : '$(circle-slash) ';
    return {
      label: `${mark}${icon}${name}`,
      description: row ? row.title : undefined,
      detail: row ? row.detail : undefined,
      backend: name,
    };
  });
}

/**
 * The offer to switch interpreters, where there is one to make: a server started here (stdio: the editor picks
 * its interpreter), an interpreter the user has not declined for this workspace.
 */
export function interpreterOffer(report: HostBackends | undefined, stdio: boolean, declined: readonly string[]): InterpreterAdvice | undefined {
  if (!stdio || !report) {
    return undefined;
  }
  return report.interpreters.find((a) => a.pythons.length > 0 && !a.pythons.every((p) => declined.includes(p)));
}
