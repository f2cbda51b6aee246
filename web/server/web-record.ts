/**
 * What the web tap sends to the page for one consumed record: plain JSON with the boards
 * already split into cells and the model's belief compared with the true state, so the page
 * only draws. One shape per SPA record type (Trajectory, SftRow, Rollout, Rejected,
 * PolicyUpdate); records that could not be decoded arrive as the dead letter that says why.
 *
 * Total over what a topic can hold: every record the schemas allow and any bytes (the property
 * test in test/hostile/web-tap-cards.test.ts). A card whose JSON passes {@link MAX_CARD_BYTES}
 * becomes an `Odd` card that says so (a 0.8 MB record expands to megabytes of cells), so the
 * page, the server's backlog and every open stream hold cards of bounded size. Every string of a
 * card has its controls and invisible format characters escaped (`\u202E`, streams/kafka/tap-text.ts,
 * as `spa tap` prints them), so a bidi override in a key or a board shows instead of acting.
 */
import type { PolicyUpdate, Rejected, Rollout, SftRow, Trajectory, Turn } from '../../schemas/index.js';
import type { DecodedAnyRecord } from '../../streams/kafka/consume-spa-decode.js';
import { visibleStrings } from '../../streams/kafka/tap-text.js';
import { boardGrid, differingCells, firstSpan, type BoardGrid } from './board-grid.js';
import { readDeadLetterPayload, type RejectedRow } from './dead-letter-payload.js';

/** Largest card (JSON bytes) sent to the page; a larger one is replaced by an `Odd` card. */
export const MAX_CARD_BYTES = 256 * 1024;
/** Characters of a record key shown; a longer key is cut (keys are anyone's bytes). */
const MAX_KEY_CHARS = 200;

/** A board to draw; `differs` lists the cells that differ from the true board it is shown beside. */
interface WebBoard extends BoardGrid {
  readonly differs: readonly (readonly [number, number])[];
}

/** One turn: the true boards before/after, and what the model believed they were. */
interface WebTurn {
  readonly turn: number;
  readonly parse: Turn['parse'];
  readonly executed: readonly string[];
  readonly rewardText: string;
  readonly done: boolean;
  readonly before: WebBoard;
  readonly after: WebBoard;
  /** The model's `<observation>` (its belief of `before`); null when the response has none. */
  readonly believedBefore: WebBoard | null;
  /** The model's `<prediction>` (its belief of `after`); null when the response has none. */
  readonly believedAfter: WebBoard | null;
}

/** A trajectory as the page shows it. */
interface WebTrajectory {
  readonly trajectoryId: string;
  readonly groupId: string;
  readonly env: string;
  readonly variant: string;
  readonly seed: number;
  readonly mode: string;
  readonly policy: string;
  readonly policyVersion: number;
  readonly success: boolean;
  readonly totalReward: number;
  readonly penalty: number;
  readonly turns: readonly WebTurn[];
}

/** Where a record was read. */
interface WebSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly timestamp: number;
  readonly key: string | null;
}

/** A consumed record as the page receives it (`kind` is the SPA record name, or `Undecodable`). */
export type WebRecord = { readonly source: WebSource } & (
  | { readonly kind: 'Trajectory'; readonly trajectory: WebTrajectory }
  | {
      readonly kind: 'SftRow';
      readonly trajectoryId: string;
      readonly turn: number;
      readonly env: string;
      readonly annotation: string;
      readonly observation: WebBoard | null;
      readonly prediction: WebBoard | null;
      readonly answer: string | null;
    }
  | { readonly kind: 'Rollout'; readonly rollout: Omit<Rollout, 'messages'> }
  | {
      readonly kind: 'Rejected' | 'Undecodable';
      readonly rejected: Omit<Rejected, 'payload' | 'payload_fingerprint'>;
      readonly payloadBytes: number;
      /** The rejected trajectory when the payload is one as JSON (annotation failures in replay). */
      readonly payloadTrajectory: WebTrajectory | null;
      /** The rejected row when the payload is an SftRow as JSON (filterMalformed's dead letters). */
      readonly payloadRow: RejectedRow | null;
      /** Why a JSON payload is drawn as neither, e.g. `turns.0.state: missing, expected string`. */
      readonly payloadNote: string | null;
    }
  | { readonly kind: 'PolicyUpdate'; readonly policy: PolicyUpdate }
  | {
      /** A record the page gets a summary of instead of a card: too large, or not drawable. */
      readonly kind: 'Odd';
      /** What the record was (`Trajectory`, `Undecodable`, …). */
      readonly recordKind: string;
      readonly reason: 'card-too-large' | 'render-failed';
      readonly detail: string;
    }
);

const board = (grid: BoardGrid, differs: readonly (readonly [number, number])[] = []): WebBoard => ({
  ...grid,
  differs,
});

/** A belief (model text) beside the truth it describes; null when the model wrote no such span. */
function belief(text: string | null, truth: BoardGrid): WebBoard | null {
  if (text === null) return null;
  const grid = boardGrid(text);
  return board(grid, differingCells(grid, truth));
}

function webTurn(turn: Turn): WebTurn {
  const before = boardGrid(turn.state);
  const after = boardGrid(turn.state_after);
  return {
    turn: turn.turn,
    parse: turn.parse,
    executed: turn.executed,
    rewardText: turn.reward_text,
    done: turn.done,
    before: board(before),
    after: board(after),
    // response_raw is the model's own text; llm_response may be canonicalised (docs/spa-protocol.md#parser).
    believedBefore: belief(firstSpan(turn.response_raw, 'observation'), before),
    believedAfter: belief(firstSpan(turn.response_raw, 'prediction'), after),
  };
}

/** A trajectory with its boards split and the model's beliefs compared. */
function webTrajectory(t: Trajectory): WebTrajectory {
  return {
    trajectoryId: t.trajectory_id,
    groupId: t.group_id,
    env: t.env,
    variant: t.variant,
    seed: t.seed,
    mode: t.mode,
    policy: t.policy,
    policyVersion: t.policy_version,
    success: t.success,
    totalReward: t.total_reward,
    penalty: t.penalty,
    turns: t.turns.map(webTurn),
  };
}

function webRejected(kind: 'Rejected' | 'Undecodable', r: Rejected, source: WebSource): WebRecord {
  const { payload, payload_fingerprint: _fingerprint, ...rest } = r;
  const { trajectory, row, note } = readDeadLetterPayload(payload);
  return {
    kind,
    source,
    rejected: rest,
    payloadBytes: payload.length,
    payloadTrajectory: trajectory === null ? null : webTrajectory(trajectory),
    payloadRow: row,
    payloadNote: note,
  };
}

function webSftRow(row: SftRow, source: WebSource): WebRecord {
  const observation = firstSpan(row.response, 'observation');
  const prediction = firstSpan(row.response, 'prediction');
  return {
    kind: 'SftRow',
    source,
    trajectoryId: row.trajectory_id,
    turn: row.turn,
    env: row.env,
    annotation: row.annotation,
    observation: observation === null ? null : board(boardGrid(observation)),
    prediction: prediction === null ? null : board(boardGrid(prediction)),
    answer: firstSpan(row.response, 'answer'),
  };
}

/** Where `s` was read, its key cut to {@link MAX_KEY_CHARS}. */
function webSource(s: DecodedAnyRecord['source']): WebSource {
  const key = s.key?.toString('utf8') ?? null;
  return {
    topic: s.topic,
    partition: s.partition,
    offset: s.offset.toString(),
    timestamp: s.timestamp,
    key: key !== null && key.length > MAX_KEY_CHARS ? `${key.slice(0, MAX_KEY_CHARS)}…` : key,
  };
}

/** The card of a decoded record, of any size. */
function fullCard(decoded: DecodedAnyRecord, source: WebSource): WebRecord {
  if (!decoded.ok) return webRejected('Undecodable', decoded.rejected, source);
  const { value } = decoded;
  switch (value.type) {
    case 'Trajectory':
      return { kind: 'Trajectory', source, trajectory: webTrajectory(value.record) };
    case 'SftRow':
      return webSftRow(value.record, source);
    case 'Rollout': {
      const { messages: _messages, ...rollout } = value.record;
      return { kind: 'Rollout', source, rollout };
    }
    case 'Rejected':
      return webRejected('Rejected', value.record, source);
    case 'PolicyUpdate':
      return { kind: 'PolicyUpdate', source, policy: value.record };
  }
}

const kib = (bytes: number): string => `${Math.ceil(bytes / 1024)} KiB`;

/**
 * The page's view of one decoded record; never throws. A card over {@link MAX_CARD_BYTES} is
 * replaced by an `Odd` summary. Drawing is total over what the schemas allow (the property test
 * shows it), but one record must never end the tap, so a failure is caught here too and shown
 * on its card.
 */
export function toWebRecord(decoded: DecodedAnyRecord): WebRecord {
  const source = webSource(decoded.source);
  const recordKind = decoded.ok ? decoded.value.type : 'Undecodable';
  try {
    const card = visibleStrings(fullCard(decoded, source));
    const bytes = Buffer.byteLength(JSON.stringify(card));
    if (bytes <= MAX_CARD_BYTES) return card;
    const detail = `its card is ${kib(bytes)}, over the page's ${kib(MAX_CARD_BYTES)}: npx spa tap ${source.topic} shows it whole`;
    return visibleStrings({ kind: 'Odd', source, recordKind, reason: 'card-too-large', detail });
  } catch (error) {
    const detail = String(error).slice(0, 500);
    return visibleStrings({ kind: 'Odd', source, recordKind, reason: 'render-failed', detail });
  }
}
