/**
 * Real first-turn SPA prompts for measuring and checking the ONNX policy: the ONNX-policy tests,
 * `npm run bench -- generate` and `npm run gpu-check` decode the same ones.
 */
import type { ChatTemplate } from '../../envs/protocol/chat-template.js';
import {
  SPA_MAX_ACTIONS_PER_TRAJ,
  buildMessages,
  instructionPrefix,
  type PromptMode,
} from '../../envs/protocol/index.js';
import { spaEnv } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';

const ENVS: readonly EnvName[] = ['sokoban', 'frozenlake', 'sudoku'];

/**
 * `count` real first-turn SPA generation prompts on the paper's own puzzles, cycling Sokoban,
 * FrozenLake, Sudoku from seed 10000, rendered with `template` (the model's own). They hold
 * newlines, `√` (the symbol legends), en dashes and the template's special tokens as text.
 */
export function spaPrompts(template: ChatTemplate, count: number, mode: PromptMode = 'wm'): string[] {
  return Array.from({ length: count }, (_, i) => {
    const name = ENVS[i % ENVS.length] as EnvName;
    const env = spaEnv(name, 10000 + i);
    const budget = SPA_MAX_ACTIONS_PER_TRAJ[name];
    const prefix = instructionPrefix(env, mode, budget);
    return template.generationPrompt(
      buildMessages(prefix, [{ state: env.state(), actionsLeft: budget }], { mode }),
    );
  });
}
