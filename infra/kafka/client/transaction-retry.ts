/**
 * The retry contract a sink gives `RecordSink.transaction` (transport.ts), in one place: an
 * aborted transaction left nothing visible, so a retriable broker error (a coordinator moving, a
 * broker restarting) is handled by running the whole attempt again — with the client's backoff,
 * for at least its retry count and {@link TRANSACTION_RETRY_BUDGET_MS} — and a commit whose outcome
 * is unknown is reported, never redone.
 */
import type { KafkaConnectionConfig } from './config.js';

/** How long a transaction keeps retrying a broker outage before it is reported (a restart takes ~20 s). */
const TRANSACTION_RETRY_BUDGET_MS = 120_000;

/**
 * A commit that failed past the client's EndTxn retries. The transaction may already be visible,
 * so it is reported, never redone (redoing it could write every record twice).
 */
export class CommitOutcomeUnknown extends Error {
  constructor(readonly reported: Error) {
    super(reported.message, { cause: reported });
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `attempt` until it resolves. A {@link CommitOutcomeUnknown} is thrown as its report at once;
 * an error `retriable` accepts is retried after the config's backoff (`initialRetryTimeMs`,
 * doubling, capped at `maxRetryTimeMs`) until both the retry count and the budget are spent; any
 * other error, or the last one, is thrown as `giveUp` makes it.
 */
export async function retryTransaction<T>(
  attempt: () => Promise<T>,
  retry: KafkaConnectionConfig['retry'],
  retriable: (error: unknown) => boolean,
  giveUp: (error: unknown) => unknown,
): Promise<T> {
  const started = Date.now();
  for (let attemptNo = 0; ; attemptNo += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof CommitOutcomeUnknown) throw error.reported;
      const exhausted = attemptNo >= retry.retries && Date.now() - started > TRANSACTION_RETRY_BUDGET_MS;
      if (!retriable(error) || exhausted) throw giveUp(error);
      await sleep(Math.min(retry.initialRetryTimeMs * 2 ** attemptNo, retry.maxRetryTimeMs));
    }
  }
}

/**
 * Runs calls one at a time in the order they were made (blocks the callers, buffers nothing): a
 * sink chains its transactions through one, since transactions on one producer must not interleave.
 */
export function serialized(): <T>(work: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (work) => {
    const next = tail.then(work, work);
    tail = next.catch(() => undefined);
    return next;
  };
}
