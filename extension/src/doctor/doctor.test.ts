import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunParseError } from '../runs/parseRun';
import { doctorVerdict, parseDoctorReport, reportLines, type DoctorReport } from './doctor';

const ok = (name: string, detail: string) => ({ name, status: 'ok', detail, fix: '' });

/** A usable cpu report as `oplens doctor --json -` prints it (tests/lsp/test_lsp_doctor.py checks the server's). */
const USABLE = {
  backend: 'cpu',
  checks: [
    ok('python', '3.11.9 (/venv/bin/python)'),
    ok('torch', '2.5.1 (requires >= 2.4)'),
    ok('backend', 'cpu: CPU'),
    ok('runs directory', '/ws/.oplens/runs (writable)'),
    ok('tiny profile', '12.0 µs of Self CPU per iteration'),
    ok('language server', 'imports'),
  ],
  usable: true,
};

const NEURON: DoctorReport = {
  backend: 'neuron',
  checks: [
    { name: 'python', status: 'ok', detail: '3.11.9', fix: '', remedy: '', command: '' },
    { name: 'torch-neuronx', status: 'problem', detail: 'not installed.', fix: 'pip install torch-neuronx\n(from the Neuron repository)', remedy: 'select_interpreter', command: '' },
    { name: 'NEURON_RT_NUM_CORES', status: 'warning', detail: 'unset', fix: 'export NEURON_RT_NUM_CORES=1', remedy: '', command: '' },
    { name: 'tiny profile', status: 'problem', detail: 'not run: torch does not import', fix: 'fix the problems above', remedy: '', command: '' },
  ],
  usable: false,
};

describe('the oplens.doctor answer', () => {
  it('parses a report, ignoring keys it does not know', () => {
    const r = parseDoctorReport({ ...USABLE, exit_code: 0 });
    assert.equal(r.backend, 'cpu');
    assert.deepEqual([r.checks[0]?.remedy, r.checks[0]?.command], ['', '']); // an older server sends neither
    assert.equal(r.usable, true);
    assert.deepEqual(
      r.checks.map((c) => c.name),
      ['python', 'torch', 'backend', 'runs directory', 'tiny profile', 'language server'],
    );
  });

  it('refuses a report without checks or with an unknown status, naming the field', () => {
    assert.throws(() => parseDoctorReport({ backend: 'cpu', usable: true }), RunParseError);
    assert.throws(() => parseDoctorReport({ ...USABLE, checks: [{ name: 'torch', status: 'fine' }] }), /checks\[0\]\.status should be one of ok, warning, problem/);
    assert.throws(() => parseDoctorReport('nope'), /is not an object/);
  });
});

describe('Check Setup: the output lines', () => {
  it('one line per check with its mark, then the verdict', () => {
    const lines = reportLines(parseDoctorReport(USABLE), 'gpu-box');
    assert.equal(lines[0], 'OpLens: Check Setup · backend cpu · gpu-box');
    assert.equal(lines.length, 1 + 6 + 1);
    assert.ok(lines.slice(1, 7).every((l) => l.startsWith('  ✓ ')));
    assert.match(lines[5] ?? '', /^ {2}✓ tiny profile {2,}12\.0 µs of Self CPU per iteration$/);
    assert.equal(lines[7], 'usable: profiling on cpu works on this host');
  });

  it('a warning and a problem carry their fix beneath, every line of it; ok lines none', () => {
    const lines = reportLines(NEURON, 'trn1');
    assert.match(lines[2] ?? '', /^ {2}✗ torch-neuronx +not installed\.$/);
    assert.match(lines[3] ?? '', /^ +fix: pip install torch-neuronx$/);
    assert.match(lines[4] ?? '', /^ +\(from the Neuron repository\)$/);
    assert.match(lines[5] ?? '', /^ {2}! NEURON_RT_NUM_CORES +unset$/);
    assert.match(lines[6] ?? '', /fix: export NEURON_RT_NUM_CORES=1/);
    assert.equal(lines.at(-1), 'not usable: 2 problems (torch-neuronx, tiny profile)');
    assert.ok(!lines.some((l) => l.includes('fix: ') && l.includes('3.11.9')));
  });
});

describe('Check Setup: the notification', () => {
  it('usable without warnings: information', () => {
    const v = doctorVerdict(parseDoctorReport(USABLE), 'gpu-box');
    assert.equal(v.severity, 'info');
    assert.match(v.message, /ready to profile \(cpu on gpu-box\): all 6 checks passed/);
    assert.deepEqual(
      v.actions.map((a) => a.kind),
      ['showOutput'],
    );
  });

  it('not usable: an error naming the first problem and its fix, which it offers to copy', () => {
    const v = doctorVerdict(NEURON, 'trn1');
    assert.equal(v.severity, 'error');
    assert.equal(
      v.message,
      'OpLens cannot profile (neuron on trn1): torch-neuronx: not installed (and 1 other problem). Fix: pip install torch-neuronx',
    );
    assert.deepEqual(v.actions.at(-1), { kind: 'copy', title: 'Copy Fix', text: 'pip install torch-neuronx\n(from the Neuron repository)' });
  });

  it('usable with warnings: a warning naming the first one and its fix', () => {
    const report: DoctorReport = { ...NEURON, checks: NEURON.checks.filter((c) => c.status !== 'problem'), usable: true };
    const v = doctorVerdict(report, 'trn1');
    assert.equal(v.severity, 'warning');
    assert.equal(v.message, 'OpLens: usable (neuron on trn1), with 1 warning: NEURON_RT_NUM_CORES: unset. Fix: export NEURON_RT_NUM_CORES=1');
  });
});
