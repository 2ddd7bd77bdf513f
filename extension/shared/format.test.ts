import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonFixture } from '../test/fixtures';
import { fmtUs } from './format';

interface Expected {
  fmt_us: Record<string, string>;
}

// format.expected.json is written by the Python side (oplens.records.format) for the same inputs: the
// trace viewer's times read like the server's.
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
