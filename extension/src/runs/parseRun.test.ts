import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readRun as readRunRecord } from '../../shared/generated/run';
import { Reader } from '../../shared/reader';
import { jsonFixture } from '../../test/fixtures';
import {
  parseProfileResponse,
  parseResultNotification,
  parseRun,
  RunParseError,
} from './parseRun';

type Json = Record<string, unknown>;

function sample(): Json {
  return jsonFixture<Json>('rmsnorm_naive.cpu.result.json');
}

/** A minimal run: only the fields the Python dataclasses require. */
function minimal(): Json {
  return {
    target: { file: '/ws/m.py', qualname: 'f', first_line: 3, last_line: 5, source_sha256: 'abc' },
    backend: { name: 'neuron', device_label: 'NEURON' },
    config: { warmup: 3, iters: 20 },
    totals: { self_cpu_us: 125, self_device_us: 2355, op_calls: 6 },
    lines: [{ line: 4, self_cpu_us: 125, self_device_us: 2355, pct_device: 100, pct_cpu: 100, op_calls: 6 }],
    ops: [{ name: 'aten::mul', calls: 3, self_cpu_us: 60, self_device_us: 1164.5 }],
  };
}

describe('parseRun', () => {
  it('reads a real result.json written by the engine', () => {
    const run = parseRun(sample());
    assert.equal(run.schema, 'oplens.result/1');
    assert.equal(run.target.qualname, 'rmsnorm_naive');
    assert.equal(run.backend.device_label, 'CPU');
    assert.equal(run.lines.length, 6);
    assert.deepEqual(
      run.lines.map((l) => l.line),
      [25, 26, 27, 28, 29, 30],
    );
    assert.equal(run.ops[0]?.name, 'aten::mul');
    assert.equal(run.artifacts.trace_json, 'trace.json');
    assert.ok(run.insights.some((i) => i.kind === 'fusable_chain'));
    // the invariant the panel relies on: lines sum to the totals
    const sum = run.lines.reduce((s, l) => s + l.self_device_us, 0);
    assert.ok(Math.abs(sum - run.totals.self_device_us) < 1e-6 * run.totals.self_device_us);
  });

  it('fills optional fields with the same defaults as the Python reader', () => {
    const run = parseRun(minimal());
    assert.equal(run.schema, 'oplens.result/1');
    assert.equal(run.run_id, '');
    assert.equal(run.target.def_line, 0);
    assert.deepEqual(run.totals.wall_us, { median: 0, min: 0, max: 0, ci_low: 0, ci_high: 0 });
    assert.equal(run.totals.unattributed_device_us, 0);
    assert.deepEqual(run.artifacts, {
      trace_json: '',
      device_profile_dir: '',
      neff_ntff_pairs: [],
      worker_log: '',
      files: [],
      profile_output_dir: '',
      system_trace_files: [],
      neffs: [],
      ntffs: [],
      neuron_profiles: [],
      processed_system_trace: '',
    });
    assert.deepEqual(run.backend.warnings, []);
    assert.deepEqual(run.compile, { first_call_us: 0, compile_us: 0, graphs: 0 });
    assert.equal(run.ops[0]?.pct, 0);
    assert.equal(run.lines[0]?.noisy, false);
    assert.deepEqual(run.lines[0]?.ops, []);
    assert.equal(run.config.record_shapes, true);
    // a single process: no ranks, no spreads, no collectives
    assert.deepEqual(run.ranks, []);
    assert.equal(run.lines[0]?.ranks, null);
    assert.equal(run.lines[0]?.collective_us, 0);
    assert.equal(run.ops[0]?.category, '');
    assert.equal(run.ops[0]?.ranks, null);
    assert.equal(run.totals.ranks, null);
    assert.equal(run.totals.collective_us, 0);
  });

  it('ignores fields it does not know (a newer server)', () => {
    const data = { ...minimal(), future_field: { x: 1 }, target: { ...(minimal().target as Json), extra: true } };
    assert.doesNotThrow(() => parseRun(data));
  });

  it('names the missing required field', () => {
    const data = minimal();
    delete (data.target as Json).qualname;
    assert.throws(() => parseRun(data), (e: unknown) => e instanceof RunParseError && e.path === 'target.qualname' && /is missing/.test(e.message));
  });

  it('names a mistyped field with its index', () => {
    const data = minimal();
    (data.lines as Json[])[0] = { ...(data.lines as Json[])[0], self_device_us: 'fast' };
    assert.throws(() => parseRun(data), (e: unknown) => e instanceof RunParseError && e.path === 'lines[0].self_device_us');
  });

  it('requires the lines and ops lists', () => {
    const data = minimal();
    delete data.ops;
    assert.throws(() => parseRun(data), /ops is missing/);
  });

  it('refuses another schema version with the fix in the message', () => {
    assert.throws(() => parseRun({ ...minimal(), schema: 'oplens.result/2' }), /update the extension or the oplens package/);
    assert.throws(() => parseRun({ ...minimal(), schema: 'something/1' }), /not an OpLens result/);
  });

  it('refuses what is not an object', () => {
    assert.throws(() => parseRun(null), RunParseError);
    assert.throws(() => parseRun([1, 2]), RunParseError);
  });
});

describe('server messages', () => {
  it('oplens/result: {uri, run}', () => {
    const { uri, run } = parseResultNotification({ uri: 'file:///ws/m.py', run: minimal() });
    assert.equal(uri, 'file:///ws/m.py');
    assert.equal(run.target.qualname, 'f');
  });

  it('oplens/result errors point inside run', () => {
    const bad = minimal();
    delete bad.totals;
    assert.throws(() => parseResultNotification({ uri: 'file:///x', run: bad }), (e: unknown) => e instanceof RunParseError && e.path === 'params.run.totals');
  });

  it('oplens.profile response', () => {
    assert.deepEqual(parseProfileResponse({ run_id: 'r1', uri: 'file:///m.py', qualname: 'f', title: 'CPU 1.0 µs' }), {
      run_id: 'r1',
      uri: 'file:///m.py',
      qualname: 'f',
      title: 'CPU 1.0 µs',
    });
  });
});

describe('a function captured inside a program (capture)', () => {
  it('reads every field of records/run.py Capture, with its defaults', () => {
    const run = parseRun({
      ...minimal(),
      capture: {
        program: '/ws/train_block.py',
        argv: ['--steps', '30'],
        cwd: '/ws',
        calls_seen: 6,
        calls_skipped: 2,
        calls_profiler_warmup: 1,
        calls_profiled: 3,
        compiled_graphs: 0,
        partial: true,
        reason: 'the program ended after 6 calls',
        exit_code: 0,
        stopped: false,
        a_newer_field: 1,
      },
    });
    assert.deepEqual(run.capture, {
      program: '/ws/train_block.py',
      argv: ['--steps', '30'],
      cwd: '/ws',
      calls_seen: 6,
      calls_skipped: 2,
      calls_profiler_warmup: 1,
      calls_profiled: 3,
      compiled_graphs: 0,
      partial: true,
      reason: 'the program ended after 6 calls',
      exit_code: 0,
      stopped: false,
    });
    const stopped = parseRun({ ...minimal(), capture: { program: '-m pkg.train', exit_code: null, stopped: true } });
    assert.equal(stopped.capture?.exit_code, null);
    assert.equal(stopped.capture?.calls_profiled, 0);
    assert.deepEqual(stopped.capture?.argv, []);
  });

  it('reads compiled_graphs (the torch.compile graphs that fused its lines), 0 when absent', () => {
    assert.equal(parseRun({ ...minimal(), capture: { program: 'p.py', compiled_graphs: 2 } }).capture?.compiled_graphs, 2);
    assert.equal(parseRun({ ...minimal(), capture: { program: 'p.py', compiled_calls: 3 } }).capture?.compiled_graphs, 0);
  });

  it('null for a profile of the function alone, and in older results (absent: as Python reads them)', () => {
    assert.equal(parseRun({ ...minimal(), capture: null }).capture, null);
    assert.equal(parseRun(minimal()).capture, null);
    assert.throws(() => parseRun({ ...minimal(), capture: { argv: [] } }), /capture\.program is missing/);
  });
});

describe('a distributed run (oplens run --nproc-per-node)', () => {
  // rmsnorm_naive.ranks.result.json: three ranks merged by the server (make_fixtures.py), rank 1 slow on line 25
  const run = parseRun(jsonFixture('rmsnorm_naive.ranks.result.json'));

  it('reads its ranks, each with its part', () => {
    assert.deepEqual(
      run.ranks.map((r) => [r.rank, r.local_rank, r.world_size, r.host, r.device, r.part, r.failed]),
      [
        [0, 0, 3, 'node-a', 'cpu', 'ranks/0', ''],
        [1, 1, 3, 'node-a', 'cpu', 'ranks/1', ''],
        [2, 2, 3, 'node-a', 'cpu', 'ranks/2', ''],
      ],
    );
  });

  it('reads each line’s spread across ranks and its collective time', () => {
    const x = run.lines.find((l) => l.line === 25);
    assert.ok(x?.ranks);
    assert.equal(x.ranks.per_rank.length, 3);
    assert.equal(x.ranks.slowest, 1);
    assert.equal(x.ranks.max, x.ranks.per_rank[1]);
    assert.equal(x.ranks.median, x.ranks.per_rank[0]);
    assert.ok(x.self_device_us > x.ranks.median, 'the headline is the mean over ranks, above the median here');
    const last = run.lines[run.lines.length - 1];
    assert.ok(last && last.collective_us > 0);
  });

  it('reads collective ops, the totals’ spread and the straggler insight with its rank', () => {
    const allReduce = run.ops.find((o) => o.name === 'c10d::allreduce_');
    assert.equal(allReduce?.category, 'collective');
    assert.equal(allReduce?.ranks?.per_rank.length, 3);
    assert.ok(run.ops.filter((o) => o.name !== 'c10d::allreduce_').every((o) => o.category === ''));
    assert.equal(run.totals.ranks?.slowest, 1);
    assert.ok(run.totals.collective_us > 0);
    const straggler = run.insights.find((i) => i.kind === 'straggler');
    assert.equal(straggler?.rank, 1);
    assert.equal(straggler?.line, 25);
    assert.ok(run.insights.some((i) => i.kind === 'collective_wait' && i.rank === null));
  });

  it('a spread with missing figures takes the Python defaults', () => {
    const data: Json = { ...minimal(), ranks: [{ rank: 3 }] };
    (data.lines as Json[])[0] = { ...(data.lines as Json[])[0], ranks: { per_rank: [1, 2] } };
    const parsed = parseRun(data);
    assert.deepEqual(parsed.ranks, [{ rank: 3, local_rank: 0, world_size: 1, host: '', device: '', part: '', pid: 0, failed: '' }]);
    assert.deepEqual(parsed.lines[0]?.ranks, { per_rank: [1, 2], median: 0, min: 0, max: 0, slowest: -1 });
    assert.throws(() => parseRun({ ...minimal(), ranks: [{ host: 'a' }] }), /ranks\[0\]\.rank is missing/);
  });
});

describe('the TypeScript record matches records/run.py field for field', () => {
  // run.full.json is a Run with every field of every dataclass filled (make_fixtures.py)
  const full = jsonFixture<Json>('run.full.json');

  /** Paths of every object key in `value` (list items as `[]`), free-form maps left out. */
  function keyPaths(value: unknown, at = '', out = new Set<string>()): Set<string> {
    if (Array.isArray(value)) {
      value.forEach((v) => keyPaths(v, `${at}[]`, out));
    } else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) {
        const p = at ? `${at}.${k}` : k;
        out.add(p);
        if (k !== 'details' && k !== 'timings_ms') {
          keyPaths(v, p, out);
        }
      }
    }
    return out;
  }

  it('every field Python writes is read, and nothing else is invented', () => {
    const written = keyPaths(full);
    const read = keyPaths(parseRun(full));
    assert.deepEqual([...written].filter((p) => !read.has(p)), [], 'fields the extension drops');
    assert.deepEqual([...read].filter((p) => !written.has(p)), [], 'fields the extension invents');
  });
});

describe('each field required or defaulted as Python reads it (generated from records/run.py)', () => {
  // run.defaults.json (make_fixtures.py): `given`, a Run with only its required fields (every record
  // present), `read`, what Run.from_dict makes of it, and `required`, each path whose absence it refuses
  const fixture = jsonFixture<{ given: Json; read: Json; required: string[] }>('run.defaults.json');

  it('fills every default of every record as Run.from_dict does', () => {
    assert.deepEqual(parseRun(fixture.given), fixture.read);
  });

  it('the Python reader requires some fields (the fixture is not empty)', () => {
    assert.ok(fixture.required.includes('lines[0].self_device_us'));
    assert.ok(fixture.required.includes('artifacts.neffs[0].form'), 'NeffFile.form is required in Python');
    assert.ok(fixture.required.includes('artifacts.neuron_profiles[0].kind'), 'NeuronProfileDir.kind is required in Python');
  });

  /** A copy of `value` without the key at `path` (`lines[0].ops[0].name`). */
  function without(value: Json, path: string): Json {
    const copy = structuredClone(value);
    const steps = path.match(/[^.[\]]+/g) ?? [];
    let at: unknown = copy;
    for (const step of steps.slice(0, -1)) {
      at = Array.isArray(at) ? at[Number(step)] : (at as Json)[step];
    }
    delete (at as Json)[steps[steps.length - 1] ?? ''];
    return copy;
  }

  for (const path of fixture.required) {
    it(`refuses a run without ${path}, naming it`, () => {
      assert.throws(
        () => parseRun(without(fixture.given, path)),
        (e: unknown) => e instanceof RunParseError && e.path === path && /is missing/.test(e.message),
      );
    });
  }

  it('the generated reader is what parseRun uses once the schema is checked', () => {
    assert.deepEqual(readRunRecord(Reader.of(fixture.given, '')), parseRun(fixture.given));
  });
});
