/**
 * `spa env step`: replay actions on a given environment state, one JSON line out per JSON line in.
 * The contract the env cross-check fixtures (test/fixtures/env-transitions) are written against.
 */
import type { Readable, Writable } from 'node:stream';
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { parseEnvName } from '../../envs/registry.js';
import { SokobanEnv } from '../../envs/sokoban/sokoban-env.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';
import type { EnvAction, EnvName, Environment } from '../../envs/types.js';
import { mapJsonLines, parseJsonLine } from '../json-lines.js';

/** One validated input line. */
interface StepRequest {
  readonly env: EnvName;
  /** The state's grid/board text, any trailing coordinate sentence already stripped. */
  readonly render: string;
  readonly actions: readonly string[];
  /** FrozenLake only; default true (SPA's `is_slippery`). */
  readonly slippery: boolean;
  /** FrozenLake only: seed of the slip draws; default 0 (so output is deterministic either way). */
  readonly seed: number;
  /** Sudoku only: the initial board whose filled cells are the clues; default the render. */
  readonly puzzle: string | undefined;
}

/** One output line (before JSON encoding). */
export interface StepReport {
  readonly renders: string[];
  readonly rewards: number[];
  readonly done: boolean;
  readonly success: boolean;
  readonly description: string;
  /** Action strings the env's lookup did not know: skipped, never executed (docs/spa-envs.md#manager). */
  readonly dropped: string[];
  /** Sudoku only: `info.action_is_valid` / `info.action_is_effective` per executed action. */
  readonly valid?: boolean[];
  readonly effective?: boolean[];
}

const FIELDS = ['env', 'render', 'actions', 'slippery', 'seed', 'puzzle'] as const;
const FIELD_OWNER: Readonly<Record<string, EnvName>> = {
  slippery: 'frozenlake',
  seed: 'frozenlake',
  puzzle: 'sudoku',
};
/**
 * The coordinate sentences of docs/spa-prompts.md#states (ours for FrozenLake): a line that starts
 * so is not grid.
 */
const DESCRIPTION_LINE = /^(Player \(P\) is at |Empty positions? to be filled |No empty positions found)/;

/**
 * Drops a trailing coordinate sentence (the `text_with_coordinates` form) and trailing newlines, so
 * either the plain render or the full state text may be given.
 */
export function stripDescription(text: string): string {
  const lines = text.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n');
  if (lines.length > 1 && DESCRIPTION_LINE.test(lines[lines.length - 1] as string)) lines.pop();
  return lines.join('\n');
}

/** Validates one parsed JSON value; errors name the bad field and what would be right. */
function readStepRequest(value: unknown): StepRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('line is not a JSON object; expected {"env","render","actions",…}');
  }
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      throw new Error(`unknown field "${key}"; expected ${FIELDS.join(', ')}`);
    }
  }
  if (typeof fields.env !== 'string') {
    throw new Error('env is required: "sokoban", "frozenlake" or "sudoku"');
  }
  const env = parseEnvName(fields.env);
  for (const [key, owner] of Object.entries(FIELD_OWNER)) {
    if (fields[key] !== undefined && owner !== env) {
      throw new Error(`field "${key}" applies to ${owner} only, not ${env}`);
    }
  }
  const { render, actions, slippery, seed, puzzle } = fields;
  if (typeof render !== 'string') throw new Error(`render must be the state's text, got ${typeof render}`);
  if (!Array.isArray(actions) || !actions.every((a) => typeof a === 'string')) {
    throw new Error('actions must be an array of strings, e.g. ["Up","Left"]');
  }
  if (slippery !== undefined && typeof slippery !== 'boolean') {
    throw new Error(`slippery must be true or false, got ${JSON.stringify(slippery)}`);
  }
  if (seed !== undefined && !(typeof seed === 'number' && Number.isSafeInteger(seed))) {
    throw new Error(`seed must be an integer, got ${JSON.stringify(seed)}`);
  }
  if (puzzle !== undefined && typeof puzzle !== 'string') {
    throw new Error(`puzzle must be the initial board's text ("| 4 . . 3 | …"), got ${typeof puzzle}`);
  }
  return {
    env,
    render: stripDescription(render),
    actions: actions as string[],
    slippery: slippery ?? true,
    seed: seed ?? 0,
    puzzle: puzzle === undefined ? undefined : stripDescription(puzzle),
  };
}

/** Loads the request's state into a fresh env (counters at 0); bad renders throw, naming the problem. */
function loadEnv(request: StepRequest): Environment {
  switch (request.env) {
    case 'sokoban':
      return SokobanEnv.fromRender(request.render);
    case 'frozenlake':
      return FrozenLakeEnv.fromRender(request.render, {
        slippery: request.slippery,
        slipSeed: request.seed,
      });
    case 'sudoku':
      return SudokuEnv.fromPuzzle(request.puzzle ?? request.render, request.render);
  }
}

/**
 * Whether the loaded state is solved, for requests that execute no action. Sokoban has no
 * `isSolved`: before any step its `isDone()` can only mean "every box on a target".
 */
function solvedBeforeAnyStep(env: Environment): boolean {
  if (env instanceof FrozenLakeEnv || env instanceof SudokuEnv) return env.isSolved();
  return env.isDone();
}

/**
 * Map the action strings through the env's lookup (unknown ones are dropped,
 * docs/spa-envs.md#manager), then execute them in order, stopping after the first step that reports
 * done. Like gym, a state that is already terminal is still stepped (docs/spa-testvectors.md#sokoban
 * pushes a box off a solved board). With no executed action, `done`/`success` describe the given state.
 */
function runStepRequest(request: StepRequest): StepReport {
  const env = loadEnv(request);
  const dropped: string[] = [];
  const ids: EnvAction[] = [];
  for (const text of request.actions) {
    const id = env.lookupAction(text);
    if (id === undefined) dropped.push(text);
    else ids.push(id);
  }
  const renders: string[] = [];
  const rewards: number[] = [];
  const valid: boolean[] = [];
  const effective: boolean[] = [];
  let done = env.isDone();
  let success = solvedBeforeAnyStep(env);
  for (const id of ids) {
    const outcome = env.step(id);
    renders.push(env.render());
    rewards.push(outcome.reward);
    valid.push(outcome.valid);
    effective.push(outcome.effective);
    ({ done, success } = outcome);
    if (done) break; // SPA stops a turn at the first done (docs/spa-envs.md#manager)
  }
  const report: StepReport = { renders, rewards, done, success, description: env.describe(), dropped };
  return request.env === 'sudoku' ? { ...report, valid, effective } : report;
}

/** The output object for one input line: a report, or `{"error"}` naming the problem. */
export function stepLine(line: string): StepReport | { error: string } {
  try {
    return runStepRequest(readStepRequest(parseJsonLine(line, '{"env","render","actions",…}')));
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** `spa env step`: one JSON line out per request line in (cli/json-lines.ts). */
export function runEnvStep(input: Readable, output: Writable): Promise<void> {
  return mapJsonLines(input, output, stepLine);
}
