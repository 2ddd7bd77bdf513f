/** Test data: files under extension/test/fixtures, read from the compiled tests in out/test. */

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository root (the compiled test lives in out/test/extension/test/). */
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
