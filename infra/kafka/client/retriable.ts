/**
 * Retries `work` while it fails with an error kafkajs marks retriable, up to `budgetMs`: right
 * after CreateTopics a partition can have a leader in the metadata and still answer ListOffsets
 * with NOT_LEADER_OR_FOLLOWER for a moment, and the admin client does not retry that itself.
 */
export async function retryWhileRetriable<T>(work: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await work();
    } catch (error) {
      if ((error as { retriable?: unknown }).retriable !== true || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * kafkajs' own name for a broker that stayed away longer than its retry budget (a restart takes
 * ~20 s on a busy box, and its group coordinator a while longer): it reports that as one of these
 * non-retriable errors, though nothing about the request was wrong.
 */
const OUTLASTED_RETRIES = new Set([
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSRequestTimeoutError',
]);

/**
 * Whether `error` is a broker outage rather than a fault of the request: kafkajs marks it
 * `retriable`, or it is one of {@link OUTLASTED_RETRIES}, here or in the `cause`/`originalError`
 * kafkajs wraps the real failure in. Safe to retry whole: an aborted transaction leaves nothing
 * visible, and a consumer rejoins at the positions its read keeps.
 */
export function isTransientBrokerError(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const { name, retriable, cause, originalError } = error as {
    name?: unknown;
    retriable?: unknown;
    cause?: unknown;
    originalError?: unknown;
  };
  if (retriable === true || (typeof name === 'string' && OUTLASTED_RETRIES.has(name))) return true;
  return isTransientBrokerError(cause, depth + 1) || isTransientBrokerError(originalError, depth + 1);
}
