/**
 * The `oplens.*` settings, typed and checked. A bad value gives a message and falls back to its
 * default (it never stops the extension); `readSettings` takes a getter, so it runs without VS Code.
 *
 * The settings the server reads too take their default and bounds from the server's own
 * (`SERVER_SETTINGS`, generated from `oplens.lsp.settings`), and the Neuron modes and Explorer ports
 * from the Neuron backend's; the rest are the editor's alone, defined here.
 *
 * Pure: imports no `vscode`; unit-tested in settings.test.ts.
 */

import { EXPLORER_PORTS, NEURON_DEFAULT_MODES, NEURON_MODES, SERVER_SETTINGS } from '../../shared/generated/settings';
import { BACKENDS, type Backend } from '../../shared/names';
import { IMPORT_STRATEGIES, type ImportStrategy } from '../bundle/bundle';
import { parsePathMappings, type PathMapping } from '../server/pathMap';
export const HEAT_MODES = ['gutter', 'line', 'off'] as const;
export type HeatMode = (typeof HEAT_MODES)[number];
/** What a line's heat measures (heat/heat.ts): its share of the time, or of the headroom. */
export const HEAT_BY = ['time', 'headroom'] as const;
export type HeatBy = (typeof HEAT_BY)[number];
/** Which functions get lenses (the server's rule, `oplens.lsp.views.lensed`): every one, those with a run, none. */
export const LENS_MODES = SERVER_SETTINGS.lenses.enum;
export type LensMode = (typeof LENS_MODES)[number];

export interface Settings {
  pythonPath: string;
  /** Run the server from the extension's bundled OpLens (`useBundled`) or the interpreter's own (bundle.ts). */
  importStrategy: ImportStrategy;
  backend: Backend;
  warmup: number;
  iterations: number;
  timeoutSeconds: number;
  hintThreshold: number;
  lenses: LensMode;
  heat: HeatMode;
  /** What the heat shows: each line's time, or what is left to win on it (its headroom at the roofline). */
  heatBy: HeatBy;
  server: { url: string; tokenFile: string };
  pathMappings: PathMapping[];
  explorer: { uiPort: number; apiPort: number };
  runsDirectory: string;
  /** Profile Function in Program: the calls run untouched first, the calls profiled, end the program once captured. */
  capture: { skip: number; calls: number; stop: boolean };
  /** NeuronConfig options (only what the user set; the server and torch_neuronx default the rest). */
  neuron: {
    modes?: NeuronMode[];
    captureEnabledForNc?: string;
    maxEventsPerNc?: number;
    neffCacheDir?: string;
    /** the CLI's --neuron-exact, --neuron-measured, --neuron-debug-info, --no-neuron-with-stack (sent only where set) */
    exact?: true;
    measured?: true;
    debugInfo?: true;
    withStack?: false;
  };
}

export { NEURON_MODES };
export type NeuronMode = (typeof NEURON_MODES)[number];

const S = SERVER_SETTINGS;

export const DEFAULTS: Settings = {
  pythonPath: '',
  importStrategy: 'useBundled',
  backend: S.backend.default,
  warmup: S.warmup.default,
  iterations: S.iterations.default,
  timeoutSeconds: S.timeoutSeconds.default,
  hintThreshold: S.hintThreshold.default,
  lenses: S.lenses.default,
  heat: 'gutter',
  heatBy: 'time',
  server: { url: '', tokenFile: '' },
  pathMappings: [...S.pathMappings.default],
  explorer: { ...EXPLORER_PORTS },
  runsDirectory: '',
  capture: { skip: S.captureSkip.default, calls: S.captureCalls.default, stop: S.captureStop.default },
  neuron: {},
};

/** What a number setting takes, in JSON Schema's words (as package.json and `SERVER_SETTINGS` state it). */
interface NumberRule {
  type: 'integer' | 'number';
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
}
const PORT: NumberRule = { type: 'integer', minimum: 1, maximum: 65535 };
const COUNT: NumberRule = { type: 'integer', minimum: 0 };

/** Settings whose change needs a new server (they are read at start or in `initialize`). */
export const RESTART_KEYS = [
  'oplens.pythonPath',
  'oplens.importStrategy',
  'oplens.server.url',
  'oplens.server.tokenFile',
  'oplens.pathMappings',
  'oplens.runsDirectory',
  'oplens.hintThreshold',
  'oplens.lenses',
  'oplens.neuron',
] as const;

export type Getter = (key: string) => unknown;

/** `get('backend')` reads `oplens.backend`. */
export function readSettings(get: Getter): { settings: Settings; problems: string[] } {
  const problems: string[] = [];

  const str = (key: string, fallback: string): string => {
    const v = get(key);
    if (v === undefined || v === null) {
      return fallback;
    }
    if (typeof v !== 'string') {
      problems.push(`oplens.${key} should be a string; using "${fallback}"`);
      return fallback;
    }
    return v.trim();
  };
  const num = (key: string, fallback: number, rule: NumberRule): number => {
    const v = get(key);
    if (v === undefined || v === null) {
      return fallback;
    }
    const { minimum = -Infinity, maximum = Infinity, exclusiveMinimum = -Infinity } = rule;
    const integer = rule.type === 'integer';
    if (typeof v !== 'number' || !Number.isFinite(v) || v < minimum || v > maximum || v <= exclusiveMinimum || (integer && !Number.isInteger(v))) {
      const range =
        rule.exclusiveMinimum !== undefined ? `> ${exclusiveMinimum}` : rule.maximum === undefined ? `≥ ${minimum}` : `from ${minimum} to ${maximum}`;
      problems.push(`oplens.${key} should be ${integer ? 'an integer' : 'a number'} ${range}; using ${fallback}`);
      return fallback;
    }
    return v;
  };
  const bool = (key: string, fallback: boolean): boolean => {
    const v = get(key);
    if (v === undefined || v === null) {
      return fallback;
    }
    if (typeof v !== 'boolean') {
      problems.push(`oplens.${key} should be true or false; using ${fallback}`);
      return fallback;
    }
    return v;
  };
  const oneOf = <T extends string>(key: string, allowed: readonly T[], fallback: T): T => {
    const v = str(key, fallback);
    if ((allowed as readonly string[]).includes(v)) {
      return v as T;
    }
    problems.push(`oplens.${key} should be one of ${allowed.join(', ')}; using "${fallback}"`);
    return fallback;
  };

  let pathMappings: PathMapping[] = [];
  try {
    pathMappings = parsePathMappings(get('pathMappings'));
  } catch (e) {
    problems.push(`${(e as Error).message}; path mappings ignored`);
  }

  const url = str('server.url', '');
  if (url && !/^wss?:\/\//.test(url)) {
    problems.push(`oplens.server.url should start with ws:// or wss:// (e.g. ws://localhost:8765); got "${url}"`);
  }

  const neuron: Settings['neuron'] = {};
  const modes = get('neuron.modes');
  if (Array.isArray(modes) && modes.length > 0) {
    const bad = modes.filter((m) => !(NEURON_MODES as readonly unknown[]).includes(m));
    if (bad.length) {
      problems.push(`oplens.neuron.modes should hold only ${NEURON_MODES.join(', ')}; using the default (${NEURON_DEFAULT_MODES.join(', ')})`);
    } else {
      neuron.modes = modes as NeuronMode[];
    }
  }
  const cores = str('neuron.captureEnabledForNc', '');
  if (cores) {
    neuron.captureEnabledForNc = cores;
  }
  const maxEvents = num('neuron.maxEventsPerNc', 0, COUNT);
  if (maxEvents > 0) {
    neuron.maxEventsPerNc = maxEvents;
  }
  const neffCache = str('neuron.neffCacheDir', '');
  if (neffCache) {
    neuron.neffCacheDir = neffCache;
  }
  if (bool('neuron.exact', false)) {
    neuron.exact = true;
  }
  if (bool('neuron.measured', false)) {
    neuron.measured = true;
  }
  if (bool('neuron.debugInfo', false)) {
    neuron.debugInfo = true;
  }
  if (!bool('neuron.withStack', true)) {
    neuron.withStack = false;
  }

  const settings: Settings = {
    pythonPath: str('pythonPath', DEFAULTS.pythonPath),
    importStrategy: oneOf('importStrategy', IMPORT_STRATEGIES, DEFAULTS.importStrategy),
    backend: oneOf('backend', BACKENDS, DEFAULTS.backend),
    warmup: num('warmup', DEFAULTS.warmup, S.warmup),
    iterations: num('iterations', DEFAULTS.iterations, S.iterations),
    timeoutSeconds: num('timeoutSeconds', DEFAULTS.timeoutSeconds, S.timeoutSeconds),
    hintThreshold: num('hintThreshold', DEFAULTS.hintThreshold, S.hintThreshold),
    lenses: oneOf('lenses', LENS_MODES, DEFAULTS.lenses),
    heat: oneOf('heat', HEAT_MODES, DEFAULTS.heat),
    heatBy: oneOf('heatBy', HEAT_BY, DEFAULTS.heatBy),
    server: { url: /^wss?:\/\//.test(url) ? url : '', tokenFile: str('server.tokenFile', '') },
    pathMappings,
    explorer: {
      uiPort: num('explorer.uiPort', DEFAULTS.explorer.uiPort, PORT),
      apiPort: num('explorer.apiPort', DEFAULTS.explorer.apiPort, PORT),
    },
    runsDirectory: str('runsDirectory', DEFAULTS.runsDirectory),
    capture: {
      skip: num('captureSkip', DEFAULTS.capture.skip, S.captureSkip),
      calls: num('captureCalls', DEFAULTS.capture.calls, S.captureCalls),
      stop: bool('captureStop', DEFAULTS.capture.stop),
    },
    neuron,
  };
  return { settings, problems };
}

/** The server's `initializationOptions` (read once, in `initialize`). */
export function initializationOptions(s: Settings): Record<string, unknown> {
  return {
    pathMappings: s.pathMappings,
    hintThreshold: s.hintThreshold,
    lenses: s.lenses,
    backend: s.backend,
    warmup: s.warmup,
    iterations: s.iterations,
    timeoutSeconds: s.timeoutSeconds,
    captureSkip: s.capture.skip,
    captureCalls: s.capture.calls,
    captureStop: s.capture.stop,
    explorer: { uiPort: s.explorer.uiPort, apiPort: s.explorer.apiPort },
    ...(Object.keys(s.neuron).length ? { neuron: s.neuron } : {}),
  };
}

/** The per-request options of `oplens.profile` / `oplens.compare` (so a changed setting needs no restart). */
export function requestOptions(s: Settings): { backend: Backend; warmup: number; iters: number; timeoutSeconds: number } {
  return { backend: s.backend, warmup: s.warmup, iters: s.iterations, timeoutSeconds: s.timeoutSeconds };
}

/** The per-request options of `oplens.profile` with a `program` (a capture inside the user's program). */
export function captureOptions(s: Settings): { backend: Backend; skip: number; calls: number; stop: boolean; timeoutSeconds: number } {
  return { backend: s.backend, skip: s.capture.skip, calls: s.capture.calls, stop: s.capture.stop, timeoutSeconds: s.timeoutSeconds };
}

/** Arguments of `python -m oplens serve --stdio`. */
export function serverArgs(s: Settings): string[] {
  const args = ['-m', 'oplens', 'serve', '--stdio'];
  if (s.runsDirectory) {
    args.push('--out', s.runsDirectory);
  }
  return args;
}
