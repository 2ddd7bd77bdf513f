/**
 * The `oplens.compare` answer off the wire → its `page`, the comparison as the server writes it
 * (`oplens.views.compare`: every name, figure, speed-up and the summary already written), checked field
 * by field by the generated reader (shared/generated/views.ts).
 *
 * Pure: imports no `vscode`; unit-tested in compareAnswer.test.ts.
 */

import { readComparePage, type ComparePage } from '../../shared/generated/views';
import { Reader } from '../../shared/reader';

/** The page of an `oplens.compare` answer: the variants side by side, the first the baseline. */
export function parseComparePage(result: unknown): ComparePage {
  return Reader.of(result, 'compare result').obj('page', readComparePage);
}
