import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { candidates } from './candidates';

function python(at: string): string {
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.writeFileSync(at, '');
  return at;
}

describe('the interpreters offered without the Python extension', () => {
  it('lists the Neuron DLAMI venvs first, then the workspace venvs that exist', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'oplens-candidates-'));
    const opt = path.join(root, 'opt');
    const ws = path.join(root, 'ws');
    const neuron = python(path.join(opt, 'aws_neuronx_venv_pytorch_2_9', 'bin', 'python'));
    fs.mkdirSync(path.join(opt, 'aws_neuronx_venv_jax', 'bin'), { recursive: true }); // no python in it
    fs.mkdirSync(path.join(opt, 'other'), { recursive: true });
    const venv = python(path.join(ws, '.venv', 'bin', 'python'));
    assert.deepEqual(candidates([ws], opt), [neuron, venv]);
    assert.deepEqual(candidates([path.join(root, 'none')], path.join(root, 'missing')), []);
  });
});
