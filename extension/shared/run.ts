/**
 * The result of a profile (`result.json`, schema `oplens.result/1`), typed for the extension and
 * the webview. The records are generated from `server/oplens/records/run.py` (dataclass `Run`) into
 * `generated/run.ts`, field for field with each field's default (`make generate`; a test fails while
 * it is stale); the extension builds them from the wire with `parseRun`
 * (extension/src/runs/parseRun.ts). All times are microseconds per iteration.
 *
 * What is written here by hand is what the server does not keep as a record.
 */

// every record (interface) of result.json, as generated; their readers are parseRun's
export type * from './generated/run';
export { RUN_SCHEMA } from './generated/run';

/** A backend's device label (`BackendInfo.device_label`). */
export type DeviceLabel = 'NEURON' | 'CUDA' | 'CPU' | string;

/** One row of `oplens.compare`'s summary (the case study's side-by-side table; `engine/compare.py` writes it as a plain dict). */
export interface CompareRow {
  variant: string;
  run_id: string;
  device_label: DeviceLabel;
  self_device_us: number;
  self_cpu_us: number;
  op_calls: number;
  /** Baseline (the first row) device time over this row's; 0 when this row has no device time. */
  speedup: number;
}
