/**
 * Per-row stop detection for a continuation (docs/spa-generation.md#stop): a row ends at a stop
 * id (`<|im_end|>`/eos, not part of the text) or at the token budget, as SPA's generation does.
 * With stop strings (the `</answer>` option) it also ends once its decoded text contains one
 * (kept in the text; anything decoded after it is cut, as vLLM cuts after a stop string).
 */

/** The optional stop string that ends a turn once the answer is complete (not SPA's default). */
export const ANSWER_END = '</answer>';

/** Why a row stopped. */
export type StopReason = 'answer' | 'eos' | 'length';

/** What the detector needs: which ids stop, how to decode, the budget. */
export interface StopRule {
  readonly stopIds: ReadonlySet<number>;
  readonly decode: (ids: readonly number[]) => string;
  readonly maxNewTokens: number;
  /** Stop strings kept in the output (default none: SPA stops at eos or the budget only). */
  readonly stopStrings?: readonly string[];
}

// A stop string of n characters spans at most n tokens, so decoding the last few ids finds
// every new occurrence without re-decoding the whole continuation each step.
const WINDOW_SLACK = 4;

// A new occurrence must end inside the newest token's text, so the window is decoded only
// after a token whose own text holds a stop string's last character ('>' for `</answer>`).
// Per rule, the verdict for each id is computed once.
const closingIds = new WeakMap<StopRule, Map<number, boolean>>();

function mayClose(rule: StopRule, stopStrings: readonly string[], id: number): boolean {
  let known = closingIds.get(rule);
  if (!known) closingIds.set(rule, (known = new Map()));
  let verdict = known.get(id);
  if (verdict === undefined) {
    const text = rule.decode([id]);
    verdict = stopStrings.some((s) => text.includes(s.at(-1) ?? '')) || text.includes('\uFFFD');
    known.set(id, verdict);
  }
  return verdict;
}

/** Tracks one row's generated ids and says when it is done. */
export class StopDetector {
  /** Generated ids that belong to the continuation (a final stop id is not included). */
  readonly ids: number[] = [];
  private reason: StopReason | undefined;
  private readonly stopStrings: readonly string[];
  private readonly window: number;

  constructor(private readonly rule: StopRule) {
    if (!Number.isInteger(rule.maxNewTokens) || rule.maxNewTokens < 1) {
      throw new Error(`maxNewTokens ${rule.maxNewTokens}: expected a positive integer`);
    }
    this.stopStrings = rule.stopStrings ?? [];
    this.window = Math.max(0, ...this.stopStrings.map((s) => s.length)) + WINDOW_SLACK;
  }

  /** The reason once stopped, else undefined. */
  get stopped(): StopReason | undefined {
    return this.reason;
  }

  /** Records the next sampled id; returns the stop reason when this id ends the row. */
  push(id: number): StopReason | undefined {
    if (this.reason) throw new Error('StopDetector.push after the row stopped');
    if (this.rule.stopIds.has(id)) return (this.reason = 'eos');
    this.ids.push(id);
    if (this.stopStrings.length > 0 && mayClose(this.rule, this.stopStrings, id)) {
      const tail = this.rule.decode(this.ids.slice(-this.window));
      if (this.stopStrings.some((s) => tail.includes(s))) return (this.reason = 'answer');
    }
    if (this.ids.length >= this.rule.maxNewTokens) return (this.reason = 'length');
    return undefined;
  }

  /** The continuation text: decoded ids, cut right after the first stop string. */
  text(): string {
    const text = this.rule.decode(this.ids);
    let cut = text.length;
    for (const s of this.stopStrings) {
      const at = text.indexOf(s);
      if (at >= 0) cut = Math.min(cut, at + s.length);
    }
    return text.slice(0, cut);
  }
}
