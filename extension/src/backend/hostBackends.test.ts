import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunParseError } from '../../shared/reader';
import { BACKENDS } from '../../shared/names';
import { backendPickItems, chosenLabel, interpreterOffer, parseHostBackends } from './hostBackends';

// oplens.backends as the server answers it on this CPU host (tests/lsp/test_lsp_backends.py checks the server's side)
const cpuHost = {
  requested: 'auto',
  torch_version: '2.13.0+cpu',
  torch_error: '',
  chosen: { name: 'cpu', title: 'CPU', device_label: 'CPU', device_name: 'x86_64', note: 'auto fell back to the CPU (neuron: torch_neuronx is not installed; cuda: this torch (2.13.0+cpu) is a build without CUDA)' },
  problem: '',
  backends: [
    { name: 'auto', title: 'auto', device_label: '', available: true, detail: 'the first present of Neuron, CUDA, CPU: CPU here' },
    { name: 'cpu', title: 'CPU', device_label: 'CPU', available: true, detail: 'present: x86_64' },
    { name: 'cuda', title: 'CUDA', device_label: 'CUDA', available: false, detail: 'this torch (2.13.0+cpu) is a build without CUDA' },
    { name: 'neuron', title: 'Neuron', device_label: 'NEURON', available: false, detail: 'torch_neuronx is not installed' },
  ],
  interpreters: [],
};

// a Trainium host whose selected interpreter is the system's Python, with the DLAMI's venvs
const trnSystemPython = {
  ...cpuHost,
  interpreters: [
    {
      backend: 'neuron',
      message: 'This interpreter (/usr/bin/python3) has no torch_neuronx, so OpLens cannot profile on the NeuronCores; the Neuron venv /opt/aws_neuronx_venv_pytorch_2_9 has it. Use its Python?',
      pythons: ['/opt/aws_neuronx_venv_pytorch_2_9/bin/python', '/opt/aws_neuronx_venv_pytorch_2_8/bin/python'],
    },
  ],
};

describe('the backends of the server’s host (oplens.backends)', () => {
  it('reads the answer: what auto picks here and why, each backend present or what it lacks', () => {
    const r = parseHostBackends(cpuHost);
    assert.deepEqual(r.chosen, { name: 'cpu', title: 'CPU', deviceLabel: 'CPU', deviceName: 'x86_64', note: cpuHost.chosen.note });
    assert.deepEqual(r.backends.map((b) => [b.name, b.available]), [['auto', true], ['cpu', true], ['cuda', false], ['neuron', false]]);
    assert.equal(parseHostBackends({ ...cpuHost, chosen: null, problem: 'the cuda backend is unavailable: …' }).chosen, null);
    assert.deepEqual(parseHostBackends({ requested: 'auto' }).backends, []); // lists an older answer lacks: empty
    assert.throws(() => parseHostBackends([]), RunParseError);
  });

  it('the status bar: AUTO→ what auto picks on the host, for the setting the answer is for', () => {
    const r = parseHostBackends(cpuHost);
    assert.equal(chosenLabel(r, 'auto'), 'CPU');
    assert.equal(chosenLabel(r, 'neuron'), undefined); // an answer for another setting says nothing of this one
    assert.equal(chosenLabel(undefined, 'auto'), undefined);
  });

  it('the backend pick: every backend, the current one marked, one that cannot run here saying what it lacks', () => {
    const items = backendPickItems(parseHostBackends(cpuHost), BACKENDS, 'auto');
    assert.deepEqual(items.map((i) => i.backend), ['auto', 'cpu', 'cuda', 'neuron']);
    assert.equal(items[0]?.label, '$(check) auto');
    assert.equal(items[0]?.detail, 'the first present of Neuron, CUDA, CPU: CPU here');
    assert.equal(items[3]?.label, '$(circle-slash) neuron');
    assert.equal(items[3]?.detail, 'torch_neuronx is not installed');
    // before the server has answered: the names alone
    assert.deepEqual(backendPickItems(undefined, BACKENDS, 'cpu').map((i) => [i.label, i.detail]), [
      ['auto', undefined], ['$(check) cpu', undefined], ['cuda', undefined], ['neuron', undefined],
    ]);
  });

  it('offers a Neuron venv where the server runs here on an interpreter without torch_neuronx, unless declined', () => {
    const r = parseHostBackends(trnSystemPython);
    assert.equal(interpreterOffer(r, true, [])?.pythons[0], '/opt/aws_neuronx_venv_pytorch_2_9/bin/python');
    assert.match(interpreterOffer(r, true, [])?.message ?? '', /has no torch_neuronx/);
    assert.equal(interpreterOffer(r, false, []), undefined, 'a WebSocket server: its interpreter is not the editor’s to choose');
    assert.equal(interpreterOffer(r, true, [...trnSystemPython.interpreters[0]!.pythons]), undefined, 'declined');
    assert.equal(interpreterOffer(parseHostBackends(cpuHost), true, []), undefined, 'nothing to offer');
  });
});
