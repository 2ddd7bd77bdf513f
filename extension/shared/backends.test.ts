import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { REPO, shippedSources } from '../test/fixtures';
import { backendFacts, backendOfLabel, offers, onDevice } from './backends';
import { BACKEND_FACTS } from './generated/backends';
import * as names from './names';

describe('backend facts come from the server (shared/generated/backends.ts)', () => {
  it('every backend the names list has, with its label', () => {
    assert.deepEqual(Object.keys(BACKEND_FACTS), names.BACKENDS.filter((b) => b !== 'auto'));
    assert.equal(backendFacts('neuron').deviceLabel, 'NEURON');
    assert.equal(backendOfLabel('cuda')?.title, 'CUDA');
  });

  it('the CPU is no device apart from the host; a backend this extension does not know is', () => {
    assert.equal(onDevice({ backend: { name: 'cpu' } }), false);
    assert.equal(onDevice({ backend: { name: 'neuron' } }), true);
    assert.deepEqual(backendFacts('tpu'), { title: 'tpu', deviceLabel: 'TPU', onDevice: true });
  });

  it("a backend's commands are the registry's", () => {
    assert.equal(offers({ backend: { name: 'neuron' } }, names.OPEN_EXPLORER_COMMAND), true);
    assert.equal(offers({ backend: { name: 'cpu' } }, names.OPEN_EXPLORER_COMMAND), false);
  });

  it('no code outside the Neuron folders compares a backend name or label with a literal', () => {
    const words = Object.entries(BACKEND_FACTS).flatMap(([name, f]) => [name, f.deviceLabel]);
    const compared = new RegExp(`[!=]==?\\s*'(${words.join('|')})'|'(${words.join('|')})'\\s*[!=]==?`);
    const found: string[] = [];
    const outside = (f: string): boolean => !path.relative(REPO, f).split(path.sep).some((d) => ['neuron', 'generated'].includes(d));
    for (const p of shippedSources('src', 'shared', 'webview').filter(outside)) {
      fs.readFileSync(p, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (compared.test(line)) {
            found.push(`${path.relative(REPO, p)}:${i + 1}: ${line.trim()}`);
          }
        });
    }
    assert.deepEqual(found, [], 'read shared/backends.ts instead');
  });
});
