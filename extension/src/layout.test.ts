import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { REPO, shippedSources, unitTests } from '../test/fixtures';

/**
 * One folder per feature (extension/src/<feature>/): its pure model and its VS Code glue side by side,
 * each file's header saying which it is, and its unit tests beside them. That a unit test cannot reach
 * the glue is the compiler's to check (extension/test/tsconfig.json maps `vscode` to no module); this
 * checks what it cannot: where the files are, and that the headers tell the truth.
 */

const SRC = path.join(REPO, 'extension', 'src');
const sources = shippedSources('src');
const rel = (p: string): string => path.relative(SRC, p).split(path.sep).join('/');

/** What a file imports: its module specifiers. */
function imports(text: string): string[] {
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/g)].map((m) => m[1] ?? '');
}

/** vscode itself, and the packages that only run inside VS Code. */
const glueModule = (spec: string): boolean => spec === 'vscode' || spec.startsWith('vscode-languageclient') || spec.startsWith('@vscode/');
const isGlue = new Map(sources.map((p) => [p, imports(fs.readFileSync(p, 'utf8')).some(glueModule)]));

/**
 * The feature folders in tiers, the foundations first: a module imports from its own folder, from a
 * tier below, or (tier 0 only) from its own tier; never up, nor sideways above the foundations. What
 * a lower folder needs of a higher one is an interface of its own or of a foundation, which the higher
 * satisfies and extension.ts hands in (runs/resultsView.ts for the results panel; the server's events).
 */
const FOLDER_TIERS: readonly (readonly string[])[] = [
  // the settings, the bundled OpLens, what went wrong, the server, the runs and documents it sends
  ['settings', 'bundle', 'problems', 'server', 'notebook', 'runs', 'documents'],
  ['backend', 'heat', 'progress', 'program', 'overview', 'diff', 'doctor', 'walkthrough', 'exports'],
  ['status', 'profile', 'ranks'],
  ['compare', 'neuron', 'results'],
  ['trace', 'flamegraph'], // the results page's webview scaffolding (results/csp.ts) serves them too
];

function header(p: string): string {
  const text = fs.readFileSync(p, 'utf8');
  return text.startsWith('/**') ? text.slice(0, text.indexOf('*/') + 2) : '';
}

describe('extension/src: one folder per feature', () => {
  it('every module but extension.ts (the wiring) sits in a feature folder, one level down', () => {
    const misplaced = sources.map(rel).filter((r) => r !== 'extension.ts' && r.split('/').length !== 2);
    assert.deepEqual(misplaced, []);
  });

  it('has no core/ folder: pure vs glue is told by the file', () => {
    assert.deepEqual(sources.map(rel).filter((r) => r.split('/').includes('core')), []);
  });

  it("each module's header says whether it imports vscode, truthfully", () => {
    const wrong: string[] = [];
    for (const p of sources) {
      const h = header(p);
      const says = h.includes('VS Code glue: imports `vscode`') ? 'glue' : h.includes('Pure: imports no `vscode`') ? 'pure' : 'nothing';
      const is = isGlue.get(p) ? 'glue' : 'pure';
      if (says !== is) {
        wrong.push(`${rel(p)}: is ${is}, its header says ${says}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('a pure module imports no glue module', () => {
    const wrong: string[] = [];
    for (const p of sources.filter((s) => !isGlue.get(s))) {
      for (const spec of imports(fs.readFileSync(p, 'utf8')).filter((s) => s.startsWith('.'))) {
        const target = path.resolve(path.dirname(p), `${spec}.ts`);
        if (isGlue.get(target)) {
          wrong.push(`${rel(p)} imports ${spec}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('the feature folders import downward only, by the tiers of FOLDER_TIERS', () => {
    const tierOf = new Map(FOLDER_TIERS.flatMap((tier, i) => tier.map((folder) => [folder, i] as const)));
    const folders = [...new Set(sources.map(rel).filter((r) => r.includes('/')).map((r) => r.split('/')[0] ?? ''))];
    assert.deepEqual(folders.filter((f) => !tierOf.has(f)).map((f) => `${f}/ is in no tier`), []);
    const upward: string[] = [];
    for (const p of sources.filter((s) => rel(s).includes('/'))) {
      const from = rel(p).split('/')[0] ?? '';
      for (const spec of imports(fs.readFileSync(p, 'utf8')).filter((s) => s.startsWith('../') && !s.startsWith('../../'))) {
        const to = spec.split('/')[1] ?? '';
        const [a, b] = [tierOf.get(from) ?? -1, tierOf.get(to) ?? -1];
        // the foundations (tier 0) stand on each other; above them, a folder imports only from tiers below its own
        if (to !== from && (b > a || (b === a && a !== 0))) {
          upward.push(`${rel(p)} imports ${spec}`);
        }
      }
    }
    assert.deepEqual(upward, []);
  });

  it('the tests a header names are beside it', () => {
    const missing: string[] = [];
    for (const p of sources) {
      for (const m of header(p).matchAll(/unit-tested in ([\w.]+\.test\.ts)/g)) {
        if (!fs.existsSync(path.join(path.dirname(p), m[1] ?? ''))) {
          missing.push(`${rel(p)}: ${m[1]}`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });
});

describe('unit tests sit beside what they test', () => {
  // but the two at extension/src's top, which check the whole: manifest.test.ts (package.json against
  // extension.ts) and this one
  it('each <name>.test.ts in a feature folder or shared/ beside <name>.ts', () => {
    const orphans = unitTests('src', 'shared')
      .filter((t) => path.dirname(t) !== SRC)
      .filter((t) => !fs.existsSync(t.replace(/\.test\.ts$/, '.ts')))
      .map((t) => path.relative(REPO, t));
    assert.deepEqual(orphans, []);
    const top = unitTests('src').filter((t) => path.dirname(t) === SRC);
    assert.deepEqual(top.map((t) => path.basename(t)), ['layout.test.ts', 'manifest.test.ts']);
  });

  it('extension/test holds only the shared helpers and fixtures, no tests', () => {
    assert.deepEqual(unitTests('test').map((t) => path.relative(REPO, t)), []);
  });

  it('the webviews keep no tests (their bundle has no Node)', () => {
    assert.deepEqual(unitTests('webview').map((t) => path.relative(REPO, t)), []);
  });
});
