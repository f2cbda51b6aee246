import type { RejectReason } from '../schemas/index.js';

/**
 * The output of a filtering stage: every input comes out either accepted or rejected with a
 * reason, so nothing is dropped silently (rejects go to the dead-letter topic / file).
 */
export type Verdict<T> =
  | { readonly accepted: true; readonly value: T }
  | { readonly accepted: false; readonly rejection: Rejection<T> };

/** Why a stage refused an input, with the input itself. */
export interface Rejection<T> {
  /** The record's key (trajectory id). */
  readonly key: string;
  /** The stage that refused it, e.g. `filterMalformed`. */
  readonly source: string;
  /** Machine-readable reason code, one of schemas/reject-reasons.json. */
  readonly reason: RejectReason;
  /** Human-readable explanation naming the bad part. */
  readonly detail: string;
  readonly value: T;
}
