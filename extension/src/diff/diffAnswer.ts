/**
 * The `oplens.diff` answer off the wire → its `page`, the results page's "vs previous run" view as the
 * server writes it (`oplens.views.diff`: every word and figure already written), checked field by field
 * by the generated reader (shared/generated/views.ts).
 *
 * Pure: imports no `vscode`; unit-tested in diffAnswer.test.ts.
 */

import { readDiffPage, type DiffPage } from '../../shared/generated/views';
import { Reader } from '../../shared/reader';

/** The page of an `oplens.diff` answer: its view, or (the function's first run) why there is none. */
export function parseDiffPage(result: unknown): DiffPage {
  return Reader.of(result, 'diff result').obj('page', readDiffPage);
}
