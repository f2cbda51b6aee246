/**
 * How `spa tap` shows records: readable text per record type (boards as the model sees them,
 * parse outcomes, rewards, reject reasons), or one JSON line per record. Record data is
 * untrusted: control characters in it are printed escaped (terminal-text.ts), in both forms.
 */
import type { PolicyUpdate, Rejected, Rollout, SftRow, Trajectory, Turn } from '../../schemas/index.js';
import type { DecodedAnyRecord } from '../../streams/kafka/consume-spa-decode.js';
import { blockText, inlineText, jsonText } from './terminal-text.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';

/** A template for one line of output: each value in it is escaped to stay on that line. */
const line = (parts: TemplateStringsArray, ...values: unknown[]): string =>
  parts.reduce((text, part, i) => text + inlineText(String(values[i - 1])) + part);

/** A multi-line field (a board, a response) indented, its lines kept, other controls escaped. */
const indent = (text: string, by = '      '): string =>
  blockText(text)
    .split('\n')
    .map((line) => by + line)
    .join('\n');

const list = (items: readonly (string | number)[]): string =>
  items.length > 0 ? items.join(', ') : '(none)';

/** Epoch ms as ISO time; a value no Date can hold (a hostile `created_at`) as the number. */
function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} (not a valid time)` : date.toISOString();
}

function where(source: ConsumedRecord): string {
  return line`${source.topic}[${source.partition}]@${source.offset}  ${isoTime(source.timestamp)}`;
}

function parseOutcome(turn: Turn): string {
  const { parse } = turn;
  const how = line`${parse.matched} match${parse.penalty ? ', format penalty' : ''}`;
  return parse.ok ? line`parse ok (${how})` : line`parse REJECTED ${parse.reason ?? '(no reason)'} (${how})`;
}

function formatTurn(turn: Turn): string {
  return [
    line`  turn ${turn.turn}: ${parseOutcome(turn)}`,
    line`    actions ${list(turn.parse.actions)}  executed ${list(turn.executed)}  rewards ${list(turn.rewards)}${turn.done ? '  done' : ''}`,
    '    board before:',
    indent(turn.state),
    '    board after:',
    indent(turn.state_after),
  ].join('\n');
}

function formatTrajectory(t: Trajectory): string {
  return [
    line`Trajectory ${t.trajectory_id}`,
    line`  env ${t.env} (${t.variant})  seed ${t.seed}  split ${t.split}  mode ${t.mode}  policy ${t.policy} v${t.policy_version}`,
    line`  success ${t.success}  total reward ${t.total_reward}  penalty ${t.penalty}  actions ${t.num_actions}  turns ${t.turns.length}`,
    ...t.turns.map(formatTurn),
  ].join('\n');
}

/** The contents of every `<tag>…</tag>` span in `text`. */
function spans(text: string, tag: string): string[] {
  return [...text.matchAll(new RegExp(`<${tag}>(.*?)</${tag}>`, 'gs'))].map((m) => m[1] ?? '');
}

function formatSftRow(row: SftRow): string {
  const section = (label: string, texts: string[]): string[] =>
    texts.length === 0
      ? [`  ${label}: (none)`]
      : texts.flatMap((text) => [`  ${label}:`, indent(text || '(empty)')]);
  return [
    line`SftRow ${row.trajectory_id} turn ${row.turn}`,
    line`  env ${row.env}  policy v${row.policy_version}  annotation ${row.annotation}  mask transitions ${row.mask_transitions}  prompt ${row.prompt.length} messages`,
    ...section('observation', spans(row.response, 'observation')),
    ...section('prediction', spans(row.response, 'prediction')),
    line`  answer: ${spans(row.response, 'answer').join(' | ') || '(none)'}`,
    '  response:',
    indent(row.response, '    '),
  ].join('\n');
}

function formatRollout(r: Rollout): string {
  return [
    line`Rollout ${r.trajectory_id}  group ${r.group_id}`,
    line`  env ${r.env}  seed ${r.seed}  policy v${r.policy_version}  score ${r.score}  success ${r.success}`,
    line`  turns ${r.num_turns}  turn rewards ${list(r.turn_rewards)}  penalty ${r.penalty}`,
  ].join('\n');
}

/** A dead letter's payload: the rejected trajectory's id when it is JSON, else the first bytes. */
function payloadSummary(payload: Buffer): string {
  try {
    const parsed = JSON.parse(payload.toString('utf8')) as { trajectory_id?: unknown };
    if (typeof parsed.trajectory_id === 'string')
      return line`trajectory ${parsed.trajectory_id} (JSON, ${payload.length} bytes)`;
  } catch {
    // not JSON: show bytes
  }
  const hex = payload.subarray(0, 16).toString('hex').replace(/(..)/g, '$1 ').trim();
  return `${payload.length} bytes: ${hex}${payload.length > 16 ? ' …' : ''}`;
}

function formatRejected(r: Rejected, heading = 'Rejected'): string {
  return [
    line`${heading}  reason ${r.reason}`,
    line`  key ${r.key ?? '(none)'}  from ${r.source}  at ${isoTime(r.created_at)}`,
    line`  detail: ${r.detail}`,
    `  payload ${payloadSummary(r.payload)}`,
    ...(r.payload_fingerprint
      ? [`  payload schema fingerprint ${r.payload_fingerprint.toString('hex')}`]
      : []),
  ].join('\n');
}

function formatPolicyUpdate(p: PolicyUpdate): string {
  return [
    line`PolicyUpdate v${p.version}  stage ${p.stage}  step ${p.step}`,
    line`  model ${p.model}  format ${p.format}  at ${isoTime(p.created_at)}`,
    line`  uri ${p.uri}`,
    line`  sha256 ${p.sha256}`,
  ].join('\n');
}

/** A record's headers as text (SPA's are UTF-8: traceparent, schema fingerprint, policy version). */
function headersAsText(source: ConsumedRecord): Record<string, string> {
  return Object.fromEntries(
    Object.entries(source.headers).map(([name, value]) => [name, value.toString('utf8')]),
  );
}

/** A decoded record as readable text: a heading with its position (and headers), then its fields. */
export function formatTapRecord(decoded: DecodedAnyRecord, withHeaders = false): string {
  const headers = withHeaders
    ? Object.entries(headersAsText(decoded.source)).map(
        ([name, value]) => line`\n   header ${name}: ${value}`,
      )
    : [];
  const heading =
    line`── ${where(decoded.source)}  key ${decoded.source.key?.toString('utf8') ?? '(none)'}` +
    headers.join('');
  if (!decoded.ok) return `${heading}\n${formatRejected(decoded.rejected, 'UNDECODABLE')}`;
  const { value } = decoded;
  switch (value.type) {
    case 'Trajectory':
      return `${heading}\n${formatTrajectory(value.record)}`;
    case 'SftRow':
      return `${heading}\n${formatSftRow(value.record)}`;
    case 'Rollout':
      return `${heading}\n${formatRollout(value.record)}`;
    case 'Rejected':
      return `${heading}\n${formatRejected(value.record)}`;
    case 'PolicyUpdate':
      return `${heading}\n${formatPolicyUpdate(value.record)}`;
  }
}

/** Buffers (Avro bytes/fixed) as base64 strings; everything else as JSON does it. */
function bytesAsBase64(_key: string, value: unknown): unknown {
  const buffer = value as { type?: unknown; data?: unknown } | null;
  if (buffer && buffer.type === 'Buffer' && Array.isArray(buffer.data))
    return Buffer.from(buffer.data as number[]).toString('base64');
  return value;
}

/**
 * A decoded record as one JSON line: position, key, (headers as text,) type (`Undecodable`
 * for dead letters made here), record. Every control character in it is `\u`-escaped.
 */
export function tapJsonLine(decoded: DecodedAnyRecord, withHeaders = false): string {
  const { source } = decoded;
  const json = JSON.stringify(
    {
      topic: source.topic,
      partition: source.partition,
      offset: Number(source.offset),
      timestamp: source.timestamp,
      key: source.key?.toString('utf8') ?? null,
      ...(withHeaders ? { headers: headersAsText(source) } : {}),
      type: decoded.ok ? decoded.value.type : 'Undecodable',
      record: decoded.ok ? decoded.value.record : decoded.rejected,
    },
    bytesAsBase64,
  );
  return jsonText(json);
}
