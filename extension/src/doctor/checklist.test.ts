import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXTENSION_COMMANDS } from '../../shared/names';
import { actionIcon, BUTTONS, checklist, checklistRow } from './checklist';
import type { DoctorCheck, DoctorReport } from './doctor';

const ok = (name: string, detail: string): DoctorCheck => ({ name, status: 'ok', detail, fix: '', remedy: '', command: '' });
/** A check that is not ok, as the server sends it (records/doctor.py: remedy and command default to ''). */
const check = (c: Pick<DoctorCheck, 'name' | 'status' | 'detail' | 'fix'> & Partial<DoctorCheck>): DoctorCheck => ({ remedy: '', command: '', ...c });

/** As engine/doctor.py words them on a GPU host whose interpreter has no torch. */
const TORCH_FIX = 'install torch 2.4 or newer, the CUDA build for this host (nvidia-smi on PATH): /venv/bin/python -m pip install torch';
const LSP_FIX =
  'install OpLens again into this environment with pygls 2 (in VS Code: OpLens: Install OpLens into the Selected Environment; else /venv/bin/python -m pip install the OpLens wheel, or -e the checkout)';

const NO_TORCH: DoctorReport = {
  backend: 'auto',
  checks: [
    ok('python', '3.11.9 (/venv/bin/python)'),
    check({ name: 'torch', status: 'problem', detail: "does not import: No module named 'torch'", fix: TORCH_FIX, remedy: 'install_torch', command: '/venv/bin/python -m pip install torch' }),
    check({ name: 'backend', status: 'problem', detail: 'auto: not checked (torch does not import)', fix: 'install torch first (above)' }),
    ok('runs directory', '/ws/.oplens/runs is writable'),
    check({ name: 'tiny profile', status: 'problem', detail: 'not run: torch does not import', fix: 'fix the problems above, then run oplens doctor again' }),
    check({ name: 'language server', status: 'problem', detail: 'oplens.lsp.server does not import: No module named pygls', fix: LSP_FIX, remedy: 'install_oplens' }),
  ],
  usable: false,
};

/** As backends/neuron/doctor.py words them where the interpreter lacks torch-neuronx. */
const NEURON: DoctorReport = {
  backend: 'neuron',
  checks: [
    ok('python', '3.11.9'),
    ok('torch', '2.13.0 (OpLens needs 2.4 or newer)'),
    check({ name: 'backend', status: 'problem', detail: 'neuron: torch_neuronx does not import', fix: 'install what the message names, or use --backend auto (the best backend present here)', remedy: 'choose_backend' }),
    check({ name: 'torch-neuronx', status: 'problem', detail: 'not installed', fix: 'TorchNeuron comes from the Neuron pip repository: on a Trn2/Trn3 host run pip install …', remedy: 'select_interpreter' }),
    check({ name: 'NeuronCores visible', status: 'problem', detail: 'not checked', fix: '' }),
    check({ name: 'NEURON_RT_NUM_CORES', status: 'warning', detail: '4 cores', fix: 'export NEURON_RT_NUM_CORES=1 (or unset it) where oplens runs\nor capture those cores with --neuron-cores' }),
  ],
  usable: false,
};

const command = (title: string, id: string) => ({ kind: 'command', title, command: id });
const copy = (text: string) => ({ kind: 'copy', title: BUTTONS.copyFix, text });

describe('Check Setup: the checklist', () => {
  it('every check in the report\'s order, with its status icon; a passing one has nothing to do', () => {
    const items = checklist(NEURON, { local: true });
    assert.deepEqual(
      items.map((i) => [i.check.name, i.icon]),
      [
        ['python', 'pass'],
        ['torch', 'pass'],
        ['backend', 'error'],
        ['torch-neuronx', 'error'],
        ['NeuronCores visible', 'error'],
        ['NEURON_RT_NUM_CORES', 'warning'],
      ],
    );
    assert.deepEqual(items[0]?.actions, []);
    assert.deepEqual(items[1]?.actions, []);
  });

  it('torch missing: the host\'s install command in a terminal, another interpreter, or the fix copied', () => {
    const torch = checklist(NO_TORCH, { local: true })[1];
    assert.deepEqual(torch?.actions, [
      { kind: 'terminal', title: BUTTONS.runInTerminal, command: '/venv/bin/python -m pip install torch' },
      command(BUTTONS.selectInterpreter, EXTENSION_COMMANDS.selectInterpreter),
      copy(TORCH_FIX),
    ]);
  });

  it('the language server not importing: Install OpLens into the environment', () => {
    const lsp = checklist(NO_TORCH, { local: true }).find((i) => i.check.name === 'language server');
    assert.deepEqual(lsp?.actions, [command(BUTTONS.installOplens, EXTENSION_COMMANDS.installInEnvironment), copy(LSP_FIX)]);
  });

  it('the backend: Choose Backend where torch imports; only its fix copied where torch is the problem', () => {
    assert.deepEqual(checklist(NEURON, { local: true })[2]?.actions[0], command(BUTTONS.chooseBackend, EXTENSION_COMMANDS.chooseBackend));
    assert.deepEqual(checklist(NO_TORCH, { local: true })[2]?.actions, [copy('install torch first (above)')]);
  });

  it('torch-neuronx missing: another interpreter (the Neuron venv), else the fix copied', () => {
    const item = checklist(NEURON, { local: true })[3];
    assert.deepEqual(
      item?.actions.map((a) => a.title),
      [BUTTONS.selectInterpreter, BUTTONS.copyFix],
    );
  });

  it('the others: their fix copied, every line of it; a problem without a fix has no action', () => {
    const items = checklist(NEURON, { local: true });
    assert.deepEqual(items[4]?.actions, []);
    assert.deepEqual(items[5]?.actions, [copy('export NEURON_RT_NUM_CORES=1 (or unset it) where oplens runs\nor capture those cores with --neuron-cores')]);
  });

  it('on a WebSocket server\'s host (not this one): every fix only copied, nothing run here', () => {
    for (const report of [NO_TORCH, NEURON]) {
      const kinds = checklist(report, { local: false }).flatMap((i) => i.actions.map((a) => a.kind));
      assert.ok(kinds.length > 0);
      assert.ok(kinds.every((k) => k === 'copy'));
    }
  });

  it('a usable report: all passing, no actions', () => {
    const report: DoctorReport = { backend: 'cpu', checks: [ok('python', '3.11'), ok('torch', '2.5.1')], usable: true };
    const items = checklist(report, { local: true });
    assert.ok(items.every((i) => i.icon === 'pass' && i.actions.length === 0));
  });
});

describe('Check Setup: a checklist row', () => {
  it('a problem: icon and name, what was found, then what picking it does and the fix on one line (the server\'s words)', () => {
    const items = checklist(NO_TORCH, { local: true });
    assert.deepEqual(checklistRow(items[1]!), {
      label: '$(error) torch',
      description: "does not import: No module named 'torch'",
      detail: `${BUTTONS.runInTerminal}: ${TORCH_FIX}`,
    });
    const cores = checklistRow(checklist(NEURON, { local: true })[5]!);
    assert.equal(cores.label, '$(warning) NEURON_RT_NUM_CORES');
    assert.equal(cores.detail, 'Copy Fix: export NEURON_RT_NUM_CORES=1 (or unset it) where oplens runs · or capture those cores with --neuron-cores');
  });

  it('a passing check: no detail line', () => {
    assert.deepEqual(checklistRow(checklist(NO_TORCH, { local: true })[0]!), { label: '$(pass) python', description: '3.11.9 (/venv/bin/python)' });
  });

  it('a button per action, its icon by what it does, its label unique in its row (the glue finds the action by it)', () => {
    for (const item of [...checklist(NO_TORCH, { local: true }), ...checklist(NEURON, { local: true })]) {
      const titles = item.actions.map((a) => a.title);
      assert.equal(new Set(titles).size, titles.length, item.check.name);
    }
    assert.deepEqual(
      checklist(NO_TORCH, { local: true })[1]!.actions.map(actionIcon),
      ['terminal', 'tools', 'copy'],
    );
  });
});

describe('the server\'s remedy', () => {
  it('install_torch without a command line: no terminal, another interpreter and the fix copied', () => {
    const item = checklist({ backend: 'auto', checks: [check({ name: 'torch', status: 'problem', detail: 'x', fix: 'f', remedy: 'install_torch' })], usable: false }, { local: true })[0];
    assert.deepEqual(item?.actions, [command(BUTTONS.selectInterpreter, EXTENSION_COMMANDS.selectInterpreter), copy('f')]);
  });

  it('a remedy this extension does not know (a newer server): only the fix copied', () => {
    const item = checklist({ backend: 'auto', checks: [check({ name: 'x', status: 'warning', detail: 'x', fix: 'f', remedy: 'reboot_the_host' })], usable: true }, { local: true })[0];
    assert.deepEqual(item?.actions, [copy('f')]);
  });
});
