import type { Rejected, Rollout, SftRow, Trajectory } from './index.js';
import type { TopicRole } from './topics.js';

/** The logical topics the generator writes (names are configurable at the sink). */
export type OutboundTopic = Exclude<TopicRole, 'policy'>;

/** One record on its way to a sink, tagged with its logical topic and Kafka key. */
export type Outbound =
  | { readonly topic: 'trajectories'; readonly key: string; readonly record: Trajectory }
  | { readonly topic: 'sft'; readonly key: string; readonly record: SftRow }
  | { readonly topic: 'rollouts'; readonly key: string; readonly record: Rollout }
  | { readonly topic: 'dlq'; readonly key: string; readonly record: Rejected };
