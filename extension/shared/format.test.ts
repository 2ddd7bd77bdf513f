import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRun } from '../src/runs/parseRun';
import { jsonFixture } from '../test/fixtures';
import { deviceLabel, fmtChange, fmtCount, fmtRatio, fmtShare, fmtSpeedup, fmtUs, totalsTitle, verdictPhrase } from './format';

interface Expected {
  fmt_us: Record<string, string>;
  fmt_share: Record<string, string>;
  totals_title: string;
  totals_title_capture: string;
  hint_labels: Record<string, string>;
  fmt_change: { verdict: string; ratio: number | null; text: string }[];
  fmt_ratio: Record<string, string>;
  verdict_phrases: { verdict: string; ratio: number; text: string }[];
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

describe('totalsTitle', () => {
  it('matches the server totals lens for the same run', () => {
    const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
    assert.equal(totalsTitle(run), expected.totals_title);
  });

  it('counts the calls of a capture, as the server does', () => {
    const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
    assert.equal(totalsTitle({ ...run, capture: { calls_profiled: 4, partial: true } }), expected.totals_title_capture);
  });

  it('adds the CPU time when the device is not the CPU', () => {
    const title = totalsTitle({
      backend: { name: 'neuron', device_label: 'NEURON' },
      totals: { self_device_us: 2355, self_cpu_us: 125, op_calls: 6 },
      config: { iters: 20 },
    });
    assert.equal(title, 'NEURON 2.35 ms · CPU 125.0 µs · 6 ops · 20 iters');
  });

  it('hint labels (time · share) read like the server inlay hints', () => {
    const run = parseRun(jsonFixture('rmsnorm_naive.cpu.result.json'));
    for (const line of run.lines) {
      assert.equal(`${fmtUs(line.self_device_us)} · ${fmtShare(line.pct_device)}`, expected.hint_labels[String(line.line)]);
    }
  });
});

describe('a diff in words, as the server writes it', () => {
  for (const { verdict, ratio, text } of expected.fmt_change) {
    it(`marks ${verdict} ×${ratio} as ${JSON.stringify(text)}`, () => {
      assert.equal(fmtChange(verdict, ratio), text);
    });
  }

  for (const [input, want] of Object.entries(expected.fmt_ratio)) {
    it(`writes the ratio ${input} as ${want}`, () => {
      assert.equal(fmtRatio(Number(input)), want);
    });
  }

  for (const { verdict, ratio, text } of expected.verdict_phrases) {
    it(`ends the totals lens of a ${verdict} function (×${ratio}) with ${JSON.stringify(text)}`, () => {
      assert.equal(verdictPhrase({ verdict, ratio }), text);
    });
  }
});

describe('small formatters', () => {
  it('counts: integers plain, means to two decimals', () => {
    assert.equal(fmtCount(6), '6');
    assert.equal(fmtCount(1200), '1,200');
    assert.equal(fmtCount(1.5), '1.5');
    assert.equal(fmtCount(1 / 3), '0.33');
  });

  it('speed-ups', () => {
    assert.equal(fmtSpeedup(5.844), '5.84×');
    assert.equal(fmtSpeedup(12.34), '12.3×');
    assert.equal(fmtSpeedup(0), '–');
  });

  it('device labels are upper-case, DEVICE when unknown', () => {
    assert.equal(deviceLabel('neuron'), 'NEURON');
    assert.equal(deviceLabel(' CUDA '), 'CUDA');
    assert.equal(deviceLabel(''), 'DEVICE');
    assert.equal(deviceLabel(undefined), 'DEVICE');
  });
});
