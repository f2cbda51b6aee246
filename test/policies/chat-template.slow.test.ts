/**
 * Any model, its own template: the TS renderer (@huggingface/jinja through `chatTemplateOf`, what
 * the ONNX policy uses) must give byte for byte what Python's `apply_chat_template` gives for the
 * same messages, for the tiny model's Qwen2.5 template and for a Llama-3-style one built locally
 * (chat_template_reference.py). Needs trainer/.venv → slow project.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatTemplateOf } from '../../envs/protocol/chat-template.js';
import type { ChatMessage } from '../../envs/protocol/conversation.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const SPA_SYSTEM = "You're a helpful assistant. ";

/** Conversations with what templates trip on: no system message, padding spaces, Unicode, tags. */
const CONVERSATIONS: { messages: ChatMessage[]; generation: boolean }[] = [
  {
    messages: [
      { role: 'system', content: SPA_SYSTEM },
      {
        role: 'user',
        content: 'Turn 1:\nState:\n######\n#_P√X#\nPlayer (P) is at (1,2).\nYou have 10 actions left.',
      },
    ],
    generation: true,
  },
  {
    messages: [
      { role: 'system', content: SPA_SYSTEM },
      { role: 'user', content: 'Turn 1:\nState:\n| . 1 2 4 |' },
      {
        role: 'assistant',
        content:
          '<think> <observation>s0</observation> 1 Down – push <prediction>s1</prediction></think><answer>Down</answer>',
      },
      { role: 'user', content: 'Reward:\n-0.30000000000000004\n\nTurn 2:\n  padded  \t' },
    ],
    generation: true,
  },
  {
    messages: [{ role: 'user', content: ' no system message, ünïcödé, 𝟑, <|im_end|> as text ' }],
    generation: false,
  },
  {
    messages: [
      { role: 'user', content: 'u' },
      { role: 'assistant', content: 'a\n' },
    ],
    generation: false,
  },
];

let dir: string;
let python: Record<'tiny' | 'headers', string[]>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'spa-chat-template-'));
  const run = spawnSync(
    join(repo, 'trainer/.venv/bin/python'),
    [join(repo, 'test/policies/chat_template_reference.py'), dir],
    {
      cwd: join(repo, 'trainer'),
      input: JSON.stringify(CONVERSATIONS),
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`chat_template_reference.py failed:\n${run.stderr}`);
  python = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as typeof python;
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function templateIn(folder: string) {
  const jinja = await readFile(join(folder, 'chat_template.jinja'), 'utf8').catch(() => null);
  const tokenizerConfig = JSON.parse(await readFile(join(folder, 'tokenizer_config.json'), 'utf8')) as object;
  return chatTemplateOf({ jinja, tokenizerConfig }, folder);
}

describe("a model folder's own chat template", () => {
  it.each(['tiny', 'headers'] as const)('%s: renders byte for byte as apply_chat_template', async (name) => {
    const template = await templateIn(join(dir, name));
    const ours = CONVERSATIONS.map((c) => template.render(c.messages, { addGenerationPrompt: c.generation }));
    expect(ours).toEqual(python[name]);
  });

  it('the two templates differ (so the test would catch a hard-coded Qwen rendering)', () => {
    expect(python.headers[0]).toMatch(/^<\|begin_of_text\|><\|start_header_id\|>system/);
    expect(python.headers[0]).not.toEqual(python.tiny[0]);
  });

  it('reads the template from tokenizer_config.json when there is no chat_template.jinja, and names a folder without one', async () => {
    const folder = join(dir, 'headers');
    const source = await readFile(join(folder, 'chat_template.jinja'), 'utf8');
    const config = JSON.parse(await readFile(join(folder, 'tokenizer_config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    await unlink(join(folder, 'chat_template.jinja'));
    await writeFile(
      join(folder, 'tokenizer_config.json'),
      JSON.stringify({ ...config, chat_template: source }),
    );
    const template = await templateIn(folder);
    expect(template.render(CONVERSATIONS[0]!.messages, { addGenerationPrompt: true })).toBe(
      python.headers[0],
    );
    await writeFile(join(folder, 'tokenizer_config.json'), JSON.stringify(config));
    await expect(templateIn(folder)).rejects.toThrow(`${folder} has no chat template`);
  });
});
