import { describe, expect, it } from 'vitest';
import { SPA_ENV_PROMPT_SPECS } from '../../envs/protocol/action-vocabularies.js';
import { buildMessages } from '../../envs/protocol/conversation.js';
import { instructionPrefix, instructionText } from '../../envs/protocol/instructions.js';
import { historyText, parseResponse } from '../../envs/protocol/parser.js';
import { turnRewardText } from '../../envs/protocol/python-repr.js';
import { readFileSync } from 'node:fs';
import { ChatTemplate } from '../../envs/protocol/chat-template.js';
import type { HistoryEntry } from '../../envs/protocol/types.js';

/** Qwen2.5-Instruct's own template (the tiny model's; trainer test_qwen_template checks the copy). */
const qwen = new ChatTemplate(
  readFileSync(new URL('./fixtures/qwen2.5-instruct.chat_template.jinja', import.meta.url), 'utf8'),
  { eos_token: '<|im_end|>', pad_token: '<|endoftext|>' },
);
const chatTemplate = qwen.render.bind(qwen);
const generationPrompt = qwen.generationPrompt.bind(qwen);

// Sokoban seed 10000, states s0 → s1 (docs/spa-testvectors.md#sokoban-episode, #sft-rows).
const s0 =
  '######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).';
const s1 =
  '######\n#O####\n#X_###\n#P_###\n#___##\n######\nPlayer (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1).';
const WM_FORMAT =
  '<think> <observation> [current state] </observation> [Your thoughts] <prediction> [next state]</prediction> </think> <answer> [your answer] </answer>';
const SOKOBAN_WM_PREFIX =
  instructionText('sokoban', 'wm') +
  '\nThe meaning of each symbol in the state is:\n#: wall, _: empty, O: target, \u221a: box on target, X: box, P: player, S: player on target' +
  '\nYour available actions are:\nUp, Down, Left, Right' +
  '\nYou can make up to 10 actions, separated by the action separator " || "\n';
const TURN1_USER =
  SOKOBAN_WM_PREFIX +
  `\nTurn 1:\nState:\n${s0}\nYou have 10 actions left. Always output: ${WM_FORMAT} with no extra text. Strictly follow this format. Max response length: 100 words (tokens).\n`;
const TURN2_USER = `Reward:\n-0.2\n\nTurn 2:\nState:\n${s1}\nYou have 8 actions left. Always output: ${WM_FORMAT} with no extra text. Strictly follow this format. Max response length: 100 words (tokens).\n`;
// The hypothetical model continuation of docs/spa-testvectors.md#sokoban-episode (its prediction is
// wrong; parsing does not care).
const CONTINUATION =
  ' <observation>######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).</observation> The box is up-left. Go Left, then push Up. <prediction>######\n#O####\n#X_###\n#_P###\n#___##\n######</prediction> </think> <answer>Left || Up</answer>';

const sokoban = SPA_ENV_PROMPT_SPECS.sokoban;
const prefix = instructionPrefix(sokoban, 'wm', 10);

describe('Sokoban seed 10000, docs/spa-testvectors.md#sokoban-episode, byte for byte', () => {
  it('builds the turn-1 user message and the full generation prompt', () => {
    const messages = buildMessages(prefix, [{ state: s0, actionsLeft: 10 }], { mode: 'wm' });
    expect(messages).toEqual([
      { role: 'system', content: "You're a helpful assistant. " },
      { role: 'user', content: TURN1_USER },
    ]);
    expect(generationPrompt(messages)).toBe(
      `<|im_start|>system\nYou're a helpful assistant. <|im_end|>\n<|im_start|>user\n${TURN1_USER}<|im_end|>\n<|im_start|>assistant\n<think>`,
    );
  });

  it('parses the continuation, stores the canonical response and writes turn 2 with Reward -0.2', () => {
    const parse = parseResponse(CONTINUATION, { mode: 'wm', env: sokoban });
    expect(parse.validActions).toEqual([3, 1]);
    expect(parse.canonical).toBe(
      '<think> <observation>######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).</observation> The box is up-left. Go Left, then push Up. <prediction>######\n#O####\n#X_###\n#_P###\n#___##\n######</prediction></think><answer>Left || Up</answer>',
    );
    const history: HistoryEntry[] = [
      {
        state: s0,
        actionsLeft: 10,
        llmResponse: historyText(parse),
        rewardText: turnRewardText([-0.1, -0.1], true),
      },
      { state: s1, actionsLeft: 8 },
    ];
    const messages = buildMessages(prefix, history, { mode: 'wm' });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(messages[2]?.content).toBe(parse.canonical);
    expect(messages[3]?.content).toBe(TURN2_USER);
    expect(
      generationPrompt(messages).endsWith(
        `<|im_start|>user\n${TURN2_USER}<|im_end|>\n<|im_start|>assistant\n<think>`,
      ),
    ).toBe(true);
  });

  it('ends a training sequence with the last assistant message and never writes the final reward (docs/spa-testvectors.md#sft-rows)', () => {
    const history: HistoryEntry[] = [
      { state: s0, actionsLeft: 10, llmResponse: 'GT turn 1', rewardText: '-0.2' },
      { state: s1, actionsLeft: 8, llmResponse: 'GT turn 2', rewardText: '10.9' },
      { state: 'solved grid', actionsLeft: 7 },
    ];
    const messages = buildMessages(prefix, history, { mode: 'wm', prepareForUpdate: true });
    expect(messages).toEqual([
      { role: 'system', content: "You're a helpful assistant. " },
      { role: 'user', content: TURN1_USER },
      { role: 'assistant', content: 'GT turn 1' },
      { role: 'user', content: TURN2_USER },
      { role: 'assistant', content: 'GT turn 2' },
    ]);
    expect(chatTemplate(messages, { addGenerationPrompt: false })).not.toContain('10.9');
    expect(chatTemplate(messages, { addGenerationPrompt: false }).endsWith('GT turn 2<|im_end|>\n')).toBe(
      true,
    );
  });
});

describe('buildMessages', () => {
  it('uses the base format prompt and the given max tokens', () => {
    const [, user] = buildMessages('P', [{ state: 'S', actionsLeft: 3 }], { mode: 'base', maxTokens: 42 });
    expect(user?.content).toBe(
      'P\nTurn 1:\nState:\nS\nYou have 3 actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 42 words (tokens).\n',
    );
  });

  it('prints the int-0 reward of a turn without executed actions (docs/spa-testvectors.md#env-manager)', () => {
    const history: HistoryEntry[] = [
      { state: 'S', actionsLeft: 10, llmResponse: '<think>bad', rewardText: turnRewardText([], true) },
      { state: 'S', actionsLeft: 10 },
    ];
    expect(
      buildMessages('P', history, { mode: 'wm' })[3]?.content.startsWith('Reward:\n0\n\nTurn 2:\n'),
    ).toBe(true);
  });

  it('names the turn whose state lacks actionsLeft', () => {
    expect(() => buildMessages('P', [{ state: 'S' }], { mode: 'wm' })).toThrow(/turn 1 .*actionsLeft/);
  });
});

describe("Qwen2.5's chat template through @huggingface/jinja", () => {
  it('renders each message as <|im_start|>role\\ncontent<|im_end|>\\n', () => {
    const text = chatTemplate(
      [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'u' },
        { role: 'assistant', content: 'a' },
      ],
      { addGenerationPrompt: false },
    );
    expect(text).toBe(
      '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n',
    );
  });

  it("inserts Qwen's default system message when there is none", () => {
    expect(chatTemplate([{ role: 'user', content: 'u' }], { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n',
    );
  });
});
