/**
 * One rank of a distributed run, for the results page's rank selector. Each rank's own full run
 * (its part) is stored beside the merged one, at `<run_dir>/<part>/result.json` (`part` is
 * `ranks/<R>`), on the server's host; the panel reads it as it reads a run's other files (the run
 * directory through the path mappings) and shows it as a run of its own. Nothing here knows VS Code.
 */

import type { RankInfo, Run } from '../../shared/run';
import { resolveArtifact } from './pathMap';

export const RESULT_FILE = 'result.json';

/** Where rank `rank`'s part of `run` is on the server's host, or why it has none. */
export function rankPartPath(run: Pick<Run, 'run_id' | 'run_dir' | 'ranks'>, rank: number): { info: RankInfo; dir: string; file: string } | { problem: string } {
  const info = run.ranks.find((r) => r.rank === rank);
  if (!info) {
    const have = run.ranks.map((r) => r.rank).join(', ');
    return { problem: have ? `run ${run.run_id} has no rank ${rank} (its ranks: ${have})` : `run ${run.run_id} is not a distributed run` };
  }
  if (info.failed) {
    return { problem: `rank ${rank} has no part: ${info.failed}` };
  }
  if (!info.part) {
    return { problem: `rank ${rank} has no part in run ${run.run_id}` };
  }
  if (!run.run_dir) {
    return { problem: `run ${run.run_id} does not say where it is stored (no run_dir)` };
  }
  const dir = resolveArtifact(run.run_dir, info.part);
  return { info, dir, file: resolveArtifact(dir, RESULT_FILE) };
}

/**
 * A part as read, made a run that stands on its own: its paths are relative to its own directory
 * (a part's `run_dir` is empty), so `run_dir` becomes that directory (as the server's
 * `engine.merge.rank_part` does); its id is kept (`<run_id>/ranks/<R>`), or made so where it has none.
 */
export function standalonePart(part: Run, merged: Pick<Run, 'run_id'>, info: RankInfo, dir: string): Run {
  return {
    ...part,
    run_dir: dir,
    run_id: part.run_id && part.run_id !== merged.run_id ? part.run_id : `${merged.run_id}/${info.part}`,
  };
}
