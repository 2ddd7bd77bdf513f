import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/runs/parseRun';
import { jsonFixture } from '../test/fixtures';
import { deviceLabel, fmtCount, fmtShare, fmtUs } from './format';

interface Expected {
  fmt_us: Record<string, string>;
  fmt_share: Record<string, string>;
  hint_labels: Record<string, string>;
}

// format.expected.json is written by the Python side (oplens.format, oplens.lsp.views) for the
// same inputs: the panel must read exactly like the server's hints and lenses.
const expected = jsonFixture<Expected>('format.expected.json');

describe('fmtUs', () => {
  for (const [input, want] of Object.entries(expected.fmt_us)) {
    it(`writes ${input} µs as the server does: ${want}`, () => {
      assert.equal(fmtUs(Number(input)), want);
    });
  }

  it('writes non-finite values as a dash', () => {
    assert.equal(fmtUs(Number.NaN), '–');
    assert.equal(fmtUs(Infinity), '–');
  });
});

describe('fmtShare', () => {
  for (const [input, want] of Object.entries(expected.fmt_share)) {
    it(`writes ${input} % as ${want}`, () => {
      assert.equal(fmtShare(Number(input)), want);
    });
  }
});

describe('the server inlay hints', () => {
  it('hint labels (time · share) read like the server inlay hints', () => {
    const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
    for (const line of run.lines) {
      assert.equal(`${fmtUs(line.self_device_us)} · ${fmtShare(line.pct_device)}`, expected.hint_labels[String(line.line)]);
    }
  });
});

describe('small formatters', () => {
  it('counts: integers plain, means to two decimals', () => {
    assert.equal(fmtCount(6), '6');
    assert.equal(fmtCount(1200), '1,200');
    assert.equal(fmtCount(1.5), '1.5');
    assert.equal(fmtCount(1 / 3), '0.33');
  });

  it('device labels are upper-case, DEVICE when unknown', () => {
    assert.equal(deviceLabel('neuron'), 'NEURON');
    assert.equal(deviceLabel(' CUDA '), 'CUDA');
    assert.equal(deviceLabel(''), 'DEVICE');
    assert.equal(deviceLabel(undefined), 'DEVICE');
  });
});
