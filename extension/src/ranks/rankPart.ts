/**
 * One rank of a distributed run, for the results page's rank selector. The server reads the rank's
 * own run (its part) on its host (`oplens.rankPart {run_id, rank}`, `engine.merge.rank_part`, as
 * `oplens run --rank R` does) and answers it as a run of its own; here only what is asked and what
 * a failure says.
 *
 * Pure: imports no `vscode`; unit-tested in rankPart.test.ts.
 */

import { RANK_PART_COMMAND } from '../../shared/names';
import { engineError, type RpcError } from '../problems/problems';

/** `oplens.rankPart`'s argument: rank `rank` of the distributed run `runId`. */
export function rankPartRequest(runId: string, rank: number): { run_id: string; rank: number } {
  return { run_id: runId, rank };
}

/**
 * Why rank `rank`'s own run cannot be shown, from the server's error: its message and detail
 * (`run … has no rank 7 (its ranks: 0, 1, 2)`, `rank 3 has no part: killed by SIGKILL`), or, from
 * a server older than `oplens.rankPart`, that the server must be updated.
 */
export function describeRankPartError(e: RpcError): string {
  if (/is not defined/.test(e.message) && e.message.includes(RANK_PART_COMMAND)) {
    // pygls's answer to a command it does not have: "Command name '<command>' is not defined"
    return 'the server is older than this extension (it cannot read a rank’s own run); install the same oplens where the server runs';
  }
  const err = engineError(e.data);
  return err ? `${err.message}${err.detail ? ` (${err.detail})` : ''}` : e.message;
}
