/**
 * The OpLens the extension ships (`bundled/` in the .vsix, built by bundled/build.py): its libraries
 * (`bundled/libs`: OpLens and its pure-Python dependencies, pygls, lsprotocol, cattrs, attrs,
 * websockets, rich, ...) and their wheels (`bundled/wheels`).
 *
 * With `oplens.importStrategy` `useBundled` (the default) the server runs with the user's interpreter,
 * the one with torch (or torch-neuronx), and the bundled libraries first on PYTHONPATH: nothing of
 * OpLens needs installing, the worker imports the environment's torch (and its numpy where it has one),
 * and the worker puts the bundle after the environment's packages for the user's code
 * (server/oplens/worker/parent.py's `environment_first`, told the folder by `OPLENS_BUNDLED_LIBS`). With `fromEnvironment`
 * the interpreter's own OpLens runs. Either way OpLens can be installed into that environment from the
 * wheels, with no registry (`pip install --no-index --find-links bundled/wheels oplens==VERSION`), for
 * the `oplens` command line and `%oplens` in notebooks.
 *
 * Pure: imports no `vscode`; unit-tested in bundle.test.ts.
 */

import * as path from 'node:path';

export const IMPORT_STRATEGIES = ['useBundled', 'fromEnvironment'] as const;
export type ImportStrategy = (typeof IMPORT_STRATEGIES)[number];

/** The folder the worker moves after the environment's packages (worker/parent.py's BUNDLED_LIBS_ENV). */
export const BUNDLED_LIBS_ENV = 'OPLENS_BUNDLED_LIBS';

export interface Bundle {
  /** The installed libraries: what goes first on the server's PYTHONPATH. */
  libs: string;
  /** OpLens's wheel and its dependencies' wheels: what installs OpLens with no registry. */
  wheels: string;
  /** The OpLens version of both (the extension's). */
  version: string;
}

/** The bundle inside the extension at `root`, or undefined where it has none (run from a source checkout). */
export function bundleOf(root: string, version: string, exists: (p: string) => boolean): Bundle | undefined {
  const libs = path.join(root, 'bundled', 'libs');
  const wheels = path.join(root, 'bundled', 'wheels');
  return exists(path.join(libs, 'oplens', '__init__.py')) ? { libs, wheels, version } : undefined;
}

/**
 * The environment the server (and its preflight check) runs in: `base` with `libs` first on PYTHONPATH
 * and named in OPLENS_BUNDLED_LIBS; without `libs` (fromEnvironment, or no bundle), `base` as it is
 * less a stale OPLENS_BUNDLED_LIBS.
 */
export function serverEnvironment(base: Readonly<Record<string, string | undefined>>, libs: string | undefined, delimiter: string = path.delimiter): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...base };
  delete env[BUNDLED_LIBS_ENV];
  if (libs) {
    const rest = (base.PYTHONPATH ?? '').split(delimiter).filter((p) => p && p !== libs);
    env.PYTHONPATH = [libs, ...rest].join(delimiter);
    env[BUNDLED_LIBS_ENV] = libs;
  }
  return env;
}

/**
 * `python ARGS` that installs OpLens (the CLI, `%oplens`) into the interpreter's environment from the
 * wheels (problems.ts's `installOplensCommand` writes it for a terminal): pip resolves its dependencies
 * among the wheels and what the environment has (torch must be there), keeping what already fits.
 */
export function installArgs(b: Pick<Bundle, 'wheels' | 'version'>): string[] {
  return ['-m', 'pip', 'install', '--no-index', '--find-links', b.wheels, `oplens==${b.version}`];
}

/** What pip's output says went wrong, in a sentence (its last ERROR line, else its last line). */
export function pipFailure(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  if (lines.some((l) => /No module named pip/.test(l))) {
    return 'this interpreter has no pip (python -m ensurepip adds it)';
  }
  const error = [...lines].reverse().find((l) => l.startsWith('ERROR:'));
  return (error ?? lines.at(-1) ?? 'no output').replace(/^ERROR:\s*/, '');
}
