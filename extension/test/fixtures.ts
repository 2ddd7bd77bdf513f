/**
 * What the unit tests share (they sit beside the modules they test, in extension/src/<feature>/ and
 * extension/shared/): test data under extension/test/fixtures, read from the compiled tests in
 * out/test, and the repository's files.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository root (this file compiles to out/test/extension/test/fixtures.js). */
export const REPO = path.resolve(__dirname, '..', '..', '..', '..');

export function fixturePath(name: string): string {
  return path.join(REPO, 'extension', 'test', 'fixtures', name);
}

export function readFixture(name: string): string {
  return fs.readFileSync(fixturePath(name), 'utf8');
}

export function jsonFixture<T = unknown>(name: string): T {
  return JSON.parse(readFixture(name)) as T;
}

export function repoFile(...parts: string[]): string {
  return fs.readFileSync(path.join(REPO, ...parts), 'utf8');
}

/** package.json's `contributes.configuration`: one object, or (as OpLens's) an array of titled sections. */
export type ManifestConfiguration<P> = { title?: string; properties: Record<string, P> } | { title: string; properties: Record<string, P> }[];

/** Every setting package.json contributes, by key, whichever section it is in. */
export function manifestSettings<P>(configuration: ManifestConfiguration<P>): Record<string, P> {
  return Object.assign({}, ...(Array.isArray(configuration) ? configuration : [configuration]).map((s) => s.properties)) as Record<string, P>;
}

/** The `.ts` files under extension/<dir>/ for each dir, as absolute paths, sorted. */
function tsFiles(dirs: string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(p);
      } else if (p.endsWith('.ts')) {
        files.push(p);
      }
    }
  };
  for (const dir of dirs) {
    walk(path.join(REPO, 'extension', dir));
  }
  return files.sort();
}

/** The code that ships from extension/<dir>/ for each dir: its `.ts` files but the unit tests beside them. */
export function shippedSources(...dirs: string[]): string[] {
  return tsFiles(dirs).filter((p) => !p.endsWith('.test.ts'));
}

/** The unit tests (`*.test.ts`) under extension/<dir>/ for each dir. */
export function unitTests(...dirs: string[]): string[] {
  return tsFiles(dirs).filter((p) => p.endsWith('.test.ts'));
}
