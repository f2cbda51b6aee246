/**
 * The env ↔ LLM text protocol (docs/spa-prompts.md, docs/spa-protocol.md#parser): how an env is
 * presented to an LLM (instruction prefix, turns, Qwen chat template) and how the model's text becomes
 * actions.
 */
export type { ActionLookup, EnvPromptSpec, GridSize, HistoryEntry, PromptMode } from './types.js';
export { pyRepr, turnRewardText } from './python-repr.js';
export {
  FROZENLAKE_ACTION_NAMES,
  FROZENLAKE_GRID_VOCABULARY,
  SOKOBAN_ACTION_NAMES,
  SOKOBAN_GRID_VOCABULARY,
  SPA_ENV_PROMPT_SPECS,
  freeTextLookup,
  tableLookup,
} from './action-vocabularies.js';
export { SPA_MAX_ACTIONS_PER_TRAJ, instructionPrefix, instructionText } from './instructions.js';
export {
  FORMAT_PROMPT,
  SPA_MAX_RESPONSE_TOKENS,
  SYSTEM_PROMPT,
  buildMessages,
  type ChatMessage,
  type ChatRole,
  type ConversationOptions,
} from './conversation.js';
export { ChatTemplate, THINK_OPEN, chatTemplateOf, type RenderOptions } from './chat-template.js';
export {
  SPA_MAX_ACTIONS_PER_TURN,
  historyText,
  parseResponse,
  type ParseMatch,
  type ParseOptions,
  type ParseRejection,
  type ParseResult,
} from './parser.js';
