import type { Command } from 'commander';
import type { EnvName } from '../../envs/types.js';
import { SPA_ENV_PROMPT_SPECS } from '../../envs/protocol/action-vocabularies.js';
import { parseResponse } from '../../envs/protocol/parser.js';
import type { PromptMode } from '../../envs/protocol/types.js';
import { mapJsonLines, parseJsonLine } from '../json-lines.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const MODES: readonly PromptMode[] = ['wm', 'base'];
const ENVS: readonly EnvName[] = ['sokoban', 'frozenlake', 'sudoku'];

/** One validated input line of `spa parse`. */
interface ParseRequest {
  readonly mode: PromptMode;
  readonly env: EnvName;
  readonly continuation: string;
  readonly spaFallbackBug: boolean;
}

/** Validates one JSON line; the error names the bad field and what would be right. */
function readRequest(line: string): ParseRequest {
  const value = parseJsonLine(line, '{"mode","env","continuation","spa_fallback_bug"?}');
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('line is not a JSON object; expected {"mode","env","continuation","spa_fallback_bug"?}');
  }
  const { mode, env, continuation, spa_fallback_bug: bug } = value as Record<string, unknown>;
  if (!MODES.includes(mode as PromptMode)) {
    throw new Error(`mode ${JSON.stringify(mode)} is not one of ${MODES.join(', ')}`);
  }
  if (!ENVS.includes(env as EnvName))
    throw new Error(`env ${JSON.stringify(env)} is not one of ${ENVS.join(', ')}`);
  if (typeof continuation !== 'string') {
    throw new Error(
      `continuation must be a string (the text after the prompt's <think>), got ${typeof continuation}`,
    );
  }
  if (bug !== undefined && typeof bug !== 'boolean') {
    throw new Error(`spa_fallback_bug must be true or false when given, got ${JSON.stringify(bug)}`);
  }
  return { mode: mode as PromptMode, env: env as EnvName, continuation, spaFallbackBug: bug === true };
}

/** The output object for one input line (snake_case like the input). */
function parseLine(line: string): Record<string, unknown> {
  try {
    const request = readRequest(line);
    const result = parseResponse(request.continuation, {
      mode: request.mode,
      env: SPA_ENV_PROMPT_SPECS[request.env],
      reproduceSpaFallbackBug: request.spaFallbackBug,
    });
    return {
      matched: result.matched,
      ok: result.ok,
      actions: result.actions,
      valid_ids: result.validActions,
      penalty: result.penalty,
      canonical: result.canonical,
      reason: result.reason,
    };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** `spa parse`: SPA's response parser (docs/spa-protocol.md#parser) over JSON Lines on stdin. */
export function registerParseCommand(program: Command): void {
  program
    .command('parse')
    .description(COMMAND_SUMMARIES.parse)
    .action(async () => {
      await mapJsonLines(process.stdin, process.stdout, parseLine); // a bad line yields {"error"}
    });
}
