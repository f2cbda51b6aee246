/**
 * The env ↔ LLM text protocol (docs/spa-prompts.md, docs/spa-protocol.md#parser): how an env is
 * presented to an LLM (instruction prefix, turns, Qwen chat template) and how the model's text becomes
 * actions.
 */
export type { HistoryEntry, PromptMode } from './types.js';
export { turnRewardText } from './python-repr.js';
export { SPA_MAX_ACTIONS_PER_TRAJ, instructionPrefix } from './instructions.js';
export { buildMessages } from './conversation.js';
export { historyText, parseResponse, type ParseResult } from './parser.js';
