/**
 * From the model's text to env actions: SPA's two response parsers (world model,
 * docs/spa-protocol.md#world-model; base, #base) and the action mapping with its format penalty
 * (#actions). Pure; never throws.
 */
import type { EnvAction } from '../types.js';
import { PY_WS, pyStrip } from './internal/python-text.js';
import type { ActionLookup, PromptMode } from './types.js';

/** Which pattern matched: the mode's full pattern, only SPA's single-line `<answer>` fallback (wm), or nothing. */
export type ParseMatch = 'strict' | 'fallback' | 'none';

/**
 * Why a response is not `ok`:
 * - `no-format-match`: neither the mode's pattern nor (wm) the answer fallback matched;
 * - `answer-only`: (wm) only `<answer>…</answer>` on one line was found — a format error;
 * - `empty-answer`: the pattern matched but the answer holds no action;
 * - `unknown-action`: some action is not in the env's vocabulary and was dropped.
 */
export type ParseRejection = 'no-format-match' | 'answer-only' | 'empty-answer' | 'unknown-action';

/** The parse of one response plus its mapping onto the env's actions. */
export interface ParseResult {
  readonly matched: ParseMatch;
  /** Strict match and no format penalty. */
  readonly ok: boolean;
  /** The action strings SPA hands to `_extract_map_valid_actions`. */
  readonly actions: string[];
  /** `actions` after the env lookup, unknown ones dropped (ids, or strings for Sudoku). */
  readonly validActions: EnvAction[];
  /**
   * SPA's format penalty (−0.1) applies: something was dropped or nothing is left
   * (docs/spa-protocol.md#actions).
   */
  readonly penalty: boolean;
  /** SPA's re-serialised `llm_response` on a strict match, else null (history keeps `raw`). */
  readonly canonical: string | null;
  readonly reason: ParseRejection | null;
  /** What the parser saw: `"<think>" + continuation`. */
  readonly raw: string;
  /** (wm strict only) the stripped `<observation>` content, SPA's `llm_predict_cur_state`; else null. */
  readonly observation: string | null;
  /** (wm strict only) the stripped `<prediction>` content, SPA's `llm_predict_next_state`; else null. */
  readonly prediction: string | null;
}

/** Options of `parseResponse`. */
export interface ParseOptions {
  readonly mode: PromptMode;
  readonly env: ActionLookup;
  /**
   * Reproduce SPA's fallback bug (docs/spa-protocol.md#world-model): the fallback answer is a
   * *string* that SPA iterates per character, so table envs map nothing (penalty) while
   * Sudoku executes one action per character without penalty. Default false: a fallback
   * match is a format error with no actions.
   */
  readonly reproduceSpaFallbackBug?: boolean | undefined;
  /** `max_actions_per_turn`; SPA uses 5. */
  readonly maxActionsPerTurn?: number | undefined;
}

/** SPA's `max_actions_per_turn` (`config/base.yaml`). */
const SPA_MAX_ACTIONS_PER_TURN = 5;

const ACTION_SEPARATOR = '||';

// Python `re` semantics in JS: the `s` flag is DOTALL; `\s` is spelled out as Python's
// whitespace set; lazy groups and leftmost-first search behave the same in both engines.
const WORLD_MODEL_PATTERN = new RegExp(
  `<think>${PY_WS}*<observation>(.*?)</observation>(.*?)<prediction>(.*?)</prediction>${PY_WS}*</think>${PY_WS}*<answer>(.*?)</answer>`,
  's',
);
const BASE_PATTERN = new RegExp(`<think>(.*?)</think>${PY_WS}*<answer>(.*?)</answer>`, 's');
// No DOTALL in SPA: Python's `.` then excludes only "\n" (JS's `.` would also exclude \r, U+2028/9).
const ANSWER_FALLBACK_PATTERN = /<answer>([^\n]*?)<\/answer>/;

/** The tokens each parser deletes from the captured parts, in SPA's order. */
const SPECIAL_TOKENS: Readonly<Record<PromptMode, readonly string[]>> = {
  wm: [
    '<think>',
    '</think>',
    '<observation>',
    '</observation>',
    '<prediction>',
    '</prediction>',
    '<answer>',
    '</answer>',
    '<|im_start|>',
    '<|im_end|>',
  ],
  base: ['<think>', '</think>', '<answer>', '</answer>', '<|im_start|>', '<|im_end|>'],
};

/** SPA's `for tok in special_token_list: part = part.replace(tok, "").strip()`, same order. */
function removeSpecialTokens(part: string, mode: PromptMode): string {
  return SPECIAL_TOKENS[mode].reduce((text, token) => pyStrip(text.replaceAll(token, '')), part);
}

/** Split on `||`, keep non-empty stripped pieces, cap; re-join with `" || "` only when capped. */
function splitActions(answer: string, cap: number): { actions: string[]; answer: string } {
  const actions = answer
    .split(ACTION_SEPARATOR)
    .map(pyStrip)
    .filter((action) => action.length > 0);
  if (actions.length <= cap) return { actions, answer };
  const kept = actions.slice(0, cap);
  return { actions: kept, answer: kept.join(` ${ACTION_SEPARATOR} `) };
}

/** `_extract_map_valid_actions` plus the es_manager's penalty rule (docs/spa-protocol.md#actions). */
function mapActions(actions: string[], env: ActionLookup) {
  const validActions = actions
    .map((action) => env.lookupAction(action))
    .filter((id): id is EnvAction => id !== undefined);
  const penalty = validActions.length !== actions.length || validActions.length === 0;
  return { validActions, penalty };
}

/** A strict match: map, judge, and attach the canonical text. */
function strictResult(
  raw: string,
  actions: string[],
  canonical: string,
  env: ActionLookup,
  states: { observation: string | null; prediction: string | null },
): ParseResult {
  const { validActions, penalty } = mapActions(actions, env);
  const reason = actions.length === 0 ? 'empty-answer' : penalty ? 'unknown-action' : null;
  return {
    matched: 'strict',
    ok: !penalty,
    actions,
    validActions,
    penalty,
    canonical,
    reason,
    raw,
    ...states,
  };
}

function parseWorldModel(raw: string, options: ParseOptions, cap: number): ParseResult {
  const match = WORLD_MODEL_PATTERN.exec(raw);
  if (match === null) return worldModelFallback(raw, options);
  const [cur, think, next, act] = [match[1], match[2], match[3], match[4]].map((part) =>
    removeSpecialTokens(part ?? '', 'wm'),
  ) as [string, string, string, string];
  const { actions, answer } = splitActions(act, cap);
  // No space before </think>, and empty thoughts leave two spaces: docs/spa-testvectors.md#parser.
  const canonical = `<think> <observation>${cur}</observation> ${think} <prediction>${next}</prediction></think><answer>${answer}</answer>`;
  return strictResult(raw, actions, canonical, options.env, { observation: cur, prediction: next });
}

/** The wm parser's single-line `<answer>` fallback (docs/spa-protocol.md#world-model). */
function worldModelFallback(raw: string, options: ParseOptions): ParseResult {
  const none = { validActions: [], canonical: null, raw, observation: null, prediction: null };
  const answer = ANSWER_FALLBACK_PATTERN.exec(raw);
  if (answer === null) {
    return { ...none, matched: 'none', ok: false, actions: [], penalty: true, reason: 'no-format-match' };
  }
  if (options.reproduceSpaFallbackBug !== true) {
    return { ...none, matched: 'fallback', ok: false, actions: [], penalty: true, reason: 'answer-only' };
  }
  // SPA iterates the answer *string*: one "action" per character (Python iterates code points).
  const actions = Array.from(answer[1] ?? '');
  const { validActions, penalty } = mapActions(actions, options.env);
  return { ...none, matched: 'fallback', ok: false, actions, validActions, penalty, reason: 'answer-only' };
}

function parseBase(raw: string, options: ParseOptions, cap: number): ParseResult {
  const match = BASE_PATTERN.exec(raw);
  if (match === null) {
    return {
      matched: 'none',
      ok: false,
      actions: [],
      validActions: [],
      penalty: true,
      canonical: null,
      reason: 'no-format-match',
      raw,
      observation: null,
      prediction: null,
    };
  }
  const think = removeSpecialTokens(match[1] ?? '', 'base');
  const { actions, answer } = splitActions(removeSpecialTokens(match[2] ?? '', 'base'), cap);
  const canonical = `<think>${think}</think><answer>${answer}</answer>`;
  return strictResult(raw, actions, canonical, options.env, { observation: null, prediction: null });
}

/**
 * Parse the model's continuation (the text generated after the prompt's trailing `<think>`)
 * the way SPA does in `mode`, and map its actions through `env.lookupAction`.
 * The history text SPA stores for this turn is `canonical ?? raw` (see `historyText`).
 */
export function parseResponse(continuation: string, options: ParseOptions): ParseResult {
  const raw = `<think>${continuation}`;
  const cap = options.maxActionsPerTurn ?? SPA_MAX_ACTIONS_PER_TURN;
  return options.mode === 'wm' ? parseWorldModel(raw, options, cap) : parseBase(raw, options, cap);
}

/**
 * SPA's `llm_response` for the history: the canonical text on a strict match, else the raw text
 * (docs/spa-prompts.md#conversation).
 */
export function historyText(result: ParseResult): string {
  return result.canonical ?? result.raw;
}
