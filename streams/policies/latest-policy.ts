import { randomUUID } from 'node:crypto';
import type { KafkaTransport, RecordSource } from '../../infra/kafka/client/transport.js';
import { SwappingPolicy, type SwappingPolicyOptions } from '../../policies/swapping-policy.js';
import { decodeKafkaRecord } from '../kafka/spa-records.js';

export interface LatestPolicyOptions extends Omit<SwappingPolicyOptions, 'origin'> {
  readonly transport: KafkaTransport;
  /** The compacted policy topic (spa.policy). */
  readonly topic: string;
}

/**
 * `--policy latest`: a {@link SwappingPolicy} fed from spa.policy, so each new batch of episodes
 * gets the newest admissible version the trainer published.
 */
export class LatestPolicy extends SwappingPolicy {
  private source: RecordSource | undefined;

  private constructor(options: LatestPolicyOptions) {
    super({ ...options, origin: options.topic });
  }

  static async start(options: LatestPolicyOptions): Promise<LatestPolicy> {
    const follower = new LatestPolicy(options); // checks the schedule before a consumer opens
    // An ephemeral group reading the compacted topic from the start: the newest record wins.
    const source = await options.transport.source({
      groupId: `spa-policy-follower-${randomUUID()}`,
      topics: [options.topic],
      start: { kind: 'earliest' },
      ephemeral: true,
    });
    follower.source = source;
    await source.run(async (batch) => {
      for (const consumed of batch.records) {
        const decoded = decodeKafkaRecord('PolicyUpdate', consumed);
        if (decoded.ok) follower.offer(decoded.record);
        else
          follower.log(
            `ignoring undecodable record on ${options.topic}: ${decoded.rejected.reason}: ${decoded.rejected.detail}`,
          );
      }
    });
    return follower;
  }

  override async close(): Promise<void> {
    await this.source?.close();
    await super.close();
  }
}
