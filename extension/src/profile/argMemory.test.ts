import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KeyValueStore } from '../settings/memento';
import { ArgumentMemory, STATE_KEY } from './argMemory';

/** workspaceState in memory, with the same JSON round trip VS Code does. */
class MemoryState implements KeyValueStore {
  data = new Map<string, string>();
  get<T>(key: string): T | undefined {
    const raw = this.data.get(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }
  update(key: string, value: unknown): Promise<void> {
    this.data.set(key, JSON.stringify(value));
    return Promise.resolve();
  }
}

describe('ArgumentMemory', () => {
  it('remembers the expression per function, per workspace state', async () => {
    const state = new MemoryState();
    const memory = new ArgumentMemory(state);
    assert.equal(memory.get('m.py', 'f'), undefined);
    await memory.remember('m.py', 'f', 'torch.randn(4, 8)');
    assert.equal(memory.get('m.py', 'f'), 'torch.randn(4, 8)');
    // a new memory over the same state (a reload) still knows it
    assert.equal(new ArgumentMemory(state).get('m.py', 'f'), 'torch.randn(4, 8)');
    assert.equal(memory.get('other.py', 'f'), undefined);
  });

  it('prefills with: own, else the latest of the same file, else the input factory, else nothing', async () => {
    const memory = new ArgumentMemory(new MemoryState());
    assert.equal(memory.suggest('rmsnorm.py', 'rmsnorm_naive'), '');
    assert.equal(memory.suggest('rmsnorm.py', 'rmsnorm_naive', ['make_inputs', 'rmsnorm_naive']), 'make_inputs()');
    await memory.remember('rmsnorm.py', 'rmsnorm_naive', 'make_inputs(2)');
    await memory.remember('rmsnorm.py', 'rmsnorm_fused', 'make_inputs(8)');
    assert.equal(memory.suggest('rmsnorm.py', 'rmsnorm_compiled', ['make_inputs']), 'make_inputs(8)');
    assert.equal(memory.suggest('rmsnorm.py', 'rmsnorm_naive'), 'make_inputs(2)');
    assert.equal(memory.suggest('other.py', 'g', ['example_inputs', 'get_inputs']), 'example_inputs()');
  });

  it('an empty expression remembered is still the function own choice', async () => {
    const memory = new ArgumentMemory(new MemoryState());
    await memory.remember('m.py', 'f', 'x');
    await memory.remember('m.py', 'g', '');
    assert.equal(memory.suggest('m.py', 'g'), '');
  });

  it('keeps at most `limit` functions, forgetting the least recently used', async () => {
    const memory = new ArgumentMemory(new MemoryState(), 3);
    for (const name of ['a', 'b', 'c', 'd']) {
      await memory.remember('m.py', name, name);
    }
    assert.equal(memory.get('m.py', 'a'), undefined);
    assert.equal(memory.get('m.py', 'd'), 'd');
    await memory.remember('m.py', 'b', 'b2'); // b is now the newest
    await memory.remember('m.py', 'e', 'e');
    assert.equal(memory.get('m.py', 'c'), undefined);
    assert.equal(memory.get('m.py', 'b'), 'b2');
  });

  it('ignores a damaged stored value', () => {
    const state = new MemoryState();
    state.data.set(STATE_KEY, JSON.stringify({ version: 7, nonsense: true }));
    const memory = new ArgumentMemory(state);
    assert.equal(memory.get('m.py', 'f'), undefined);
    assert.equal(memory.suggest('m.py', 'f'), '');
  });

  it('forgets one function', async () => {
    const memory = new ArgumentMemory(new MemoryState());
    await memory.remember('m.py', 'f', 'x');
    await memory.forget('m.py', 'f');
    assert.equal(memory.get('m.py', 'f'), undefined);
  });
});
