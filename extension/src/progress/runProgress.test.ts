import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newProgressToken, progressStep, RunProgress, type ProgressStep } from './runProgress';

/** A profile's `$/progress` values as the server sends them (server/oplens/lsp/profiling.py; tests/lsp/test_lsp_session.py checks the words). */
const PROFILE = [
  { kind: 'begin', title: 'OpLens: slow.py::slow', cancellable: true, message: 'starting', percentage: 0 },
  { kind: 'report', message: 'importing', percentage: 2, cancellable: true },
  { kind: 'report', message: 'warm-up: the first call (compiling, where the device compiles)', percentage: 5, cancellable: true },
  { kind: 'report', message: 'warm-up 1/2', percentage: 17, cancellable: true },
  { kind: 'report', message: 'iteration 1/4', percentage: 46, cancellable: true },
  { kind: 'report', message: 'iteration 4/4', percentage: 95, cancellable: true },
  { kind: 'report', message: 'attributing', percentage: 97, cancellable: true },
  { kind: 'end', message: 'CPU 1.21 ms · 6 ops · 4 iters' },
];

function drawn(values: unknown[]): ProgressStep[] {
  const steps: ProgressStep[] = [];
  const run = new RunProgress((s) => steps.push(s), () => Promise.resolve(), 'token');
  values.forEach((v) => run.onProgress(v));
  return steps;
}

describe("a run's progress in the notification", () => {
  it("shows the server's words as they come, and its percentages as increments that add up to them", () => {
    const steps = drawn(PROFILE);
    assert.deepEqual(
      steps.map((s) => s.message),
      ['starting', 'importing', 'warm-up: the first call (compiling, where the device compiles)', 'warm-up 1/2', 'iteration 1/4', 'iteration 4/4', 'attributing'],
    );
    assert.deepEqual(
      steps.map((s) => s.increment),
      [undefined, 2, 3, 12, 29, 49, 2],
    );
    assert.equal(
      steps.reduce((sum, s) => sum + (s.increment ?? 0), 0),
      97,
    );
  });

  it("shows a compare's and a capture's words as the server writes them, the function's name first", () => {
    const steps = drawn([
      { kind: 'begin', title: 'OpLens: comparing a, b', message: 'starting', percentage: 0 },
      { kind: 'report', message: 'a (1 of 2): iteration 2/2', percentage: 47 },
      { kind: 'report', message: 'b (2 of 2): importing', percentage: 51 },
      { kind: 'report', message: 'captured 4 of 10' },
    ]);
    assert.deepEqual(
      steps.map((s) => s.message),
      ['starting', 'a (1 of 2): iteration 2/2', 'b (2 of 2): importing', 'captured 4 of 10'],
    );
    assert.deepEqual(
      steps.map((s) => s.increment),
      [undefined, 47, 4, undefined],
    );
  });

  it('never moves the bar back nor past 100, and keeps the message when the bar stays', () => {
    assert.deepEqual(progressStep({ kind: 'report', message: 'queued', percentage: 0 }, 40), { message: 'queued' });
    assert.deepEqual(progressStep({ kind: 'report', percentage: 250 }, 40), { increment: 60 });
    assert.equal(progressStep({ kind: 'report', percentage: 40 }, 40), undefined);
  });

  it('draws nothing for the end (the notification closes with the request) nor for what is not progress', () => {
    for (const value of [{ kind: 'end', message: 'cancelled' }, null, 'iteration 3/20', { kind: 'report' }, { kind: 'other', message: 'x' }, { kind: 'report', percentage: Number.NaN }]) {
      assert.equal(progressStep(value, 0), undefined, JSON.stringify(value));
    }
  });
});

describe("the notification's Cancel", () => {
  it("is the server's cancel of this run's token, sent once however often it is clicked", async () => {
    const sent: string[] = [];
    const run = new RunProgress(
      () => undefined,
      (token) => {
        sent.push(token);
        return Promise.resolve();
      },
    );
    assert.equal(run.cancelled, false);
    await Promise.all([run.cancel(), run.cancel()]);
    assert.deepEqual(sent, [run.workDoneToken]);
    assert.equal(run.cancelled, true);
  });

  it('hands a failed cancel back to the caller (the glue tells the user)', async () => {
    const run = new RunProgress(
      () => undefined,
      () => Promise.reject(new Error('the OpLens server is not running')),
    );
    await assert.rejects(run.cancel(), /not running/);
  });

  it('gives each request a token of its own', () => {
    const tokens = new Set(Array.from({ length: 100 }, () => newProgressToken()));
    assert.equal(tokens.size, 100);
    assert.ok([...tokens].every((t) => t.startsWith('oplens-')));
    assert.match(new RunProgress(() => undefined, () => Promise.resolve()).workDoneToken, /^oplens-/);
  });
});
