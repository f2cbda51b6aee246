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
