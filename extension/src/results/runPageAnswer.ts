/**
 * The `oplens.runPage` answer off the wire → its `page`, one run's results page as the server writes it
 * (`oplens.views.run`: every figure, cell, tooltip and sentence already written), checked field by
 * field by the generated reader (shared/generated/views.ts).
 *
 * Pure: imports no `vscode`; unit-tested in runPageAnswer.test.ts.
 */

import { readRunPage, type RunPage } from '../../shared/generated/views';
import { Reader } from '../../shared/reader';

/** The page of an `oplens.runPage` answer. */
export function parseRunPage(result: unknown): RunPage {
  return Reader.of(result, 'run page').obj('page', readRunPage);
}
