/**
 * A policy artifact folder as written by `spa_trainer.export` (trainer/spa_trainer/export/): `model.onnx`, the
 * tokenizer files and `manifest.json` (version, sha256 of the model, KV-cache shape). Loading
 * verifies the sha256 before anything runs the model (artifacts travel as a URI plus sha256 on
 * spa.policy, so a half-copied or tampered file must be refused, not executed).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { chatTemplateOf, type ChatTemplate } from '../../envs/protocol/chat-template.js';

/** The fields of `manifest.json` the ONNX policy relies on. */
export interface PolicyManifest {
  readonly version: number;
  readonly stage: string;
  readonly step: number;
  readonly model: string;
  readonly format: string;
  /** Lower-case hex SHA-256 of `file`. */
  readonly sha256: string;
  /** The ONNX file name inside the folder (normally `model.onnx`). */
  readonly file: string;
  readonly num_layers: number;
  readonly num_key_value_heads: number;
  readonly head_dim: number;
  readonly vocab_size: number;
  readonly eos_token_id: number | null;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  /** The graph's structure (graph-structure.ts); absent in exports made before it was listed. */
  readonly graph?: readonly string[];
}

/** A verified artifact: its manifest, the model path and the parsed tokenizer files. */
export interface PolicyArtifact {
  readonly folder: string;
  readonly manifest: PolicyManifest;
  readonly modelPath: string;
  /** Parsed `tokenizer.json`. */
  readonly tokenizerJson: object;
  /** Parsed `tokenizer_config.json`. */
  readonly tokenizerConfig: object;
  /** `generation_config.json`'s eos ids (Qwen2.5-Instruct lists `<|im_end|>` and `<|endoftext|>`). */
  readonly generationEosIds: readonly number[];
  /** The model's own chat template (`chat_template.jinja` or tokenizer_config.json's), docs/spa-models.md. */
  readonly chatTemplate: ChatTemplate;
}

const NUMBER_FIELDS = ['version', 'num_layers', 'num_key_value_heads', 'head_dim', 'vocab_size'] as const;

/** Checks the parsed manifest's shape; names the first bad field. */
export function parseManifest(value: unknown, where: string): PolicyManifest {
  if (typeof value !== 'object' || value === null) throw new Error(`${where}: expected a JSON object`);
  const record = value as Record<string, unknown>;
  for (const key of NUMBER_FIELDS) {
    if (!Number.isInteger(record[key])) {
      throw new Error(`${where}: "${key}" is ${JSON.stringify(record[key])}, expected an integer`);
    }
  }
  if (record.format !== 'onnx') {
    throw new Error(`${where}: "format" is ${JSON.stringify(record.format)}, expected "onnx"`);
  }
  if (typeof record.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(record.sha256)) {
    throw new Error(`${where}: "sha256" must be 64 lower-case hex digits`);
  }
  if (!Array.isArray(record.inputs) || !Array.isArray(record.outputs)) {
    throw new Error(`${where}: "inputs" and "outputs" must list the graph's tensor names`);
  }
  return { file: 'model.onnx', ...record } as unknown as PolicyManifest;
}

/** Streamed lower-case hex SHA-256 of a file (the same digest as spa_trainer.export's `sha256_file`). */
async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function readJson(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`${what} missing: cannot read ${path} (${(error as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${what} at ${path} is not valid JSON: ${(error as Error).message}`);
  }
}

function eosIds(config: unknown): number[] {
  const eos = (config as { eos_token_id?: unknown } | null)?.eos_token_id;
  if (Number.isInteger(eos)) return [eos as number];
  return Array.isArray(eos) ? eos.filter((id): id is number => Number.isInteger(id)) : [];
}

/** An artifact folder's parsed `manifest.json` (the model file not read). */
export async function readManifest(folder: string): Promise<PolicyManifest> {
  const manifestPath = join(folder, 'manifest.json');
  return parseManifest(await readJson(manifestPath, 'policy manifest'), manifestPath);
}

/**
 * An artifact folder's manifest and model path, the model file checked against the manifest's
 * sha256 (so the digest names the bytes that would be loaded). Throws when the manifest is
 * malformed or the digests differ.
 */
export async function verifiedModel(
  folder: string,
): Promise<{ manifest: PolicyManifest; modelPath: string }> {
  const manifest = await readManifest(folder);
  const modelPath = join(folder, manifest.file);
  const actual = await sha256File(modelPath).catch((error: Error) => {
    throw new Error(`policy model missing: cannot read ${modelPath} (${error.message})`);
  });
  if (actual !== manifest.sha256) {
    throw new Error(
      `policy model ${modelPath}: sha256 ${actual} does not match manifest.json's ${manifest.sha256} ` +
        '(the file is corrupt, half-copied or was changed after export; re-export or re-copy the artifact)',
    );
  }
  return { manifest, modelPath };
}

/**
 * Reads and verifies an artifact folder (`<root>/v<version>/`). Throws when the manifest is
 * malformed or the model file's sha256 differs from the manifest's.
 */
export async function loadPolicyArtifact(folder: string): Promise<PolicyArtifact> {
  const { manifest, modelPath } = await verifiedModel(folder);
  const generationConfig = await readJson(join(folder, 'generation_config.json'), 'generation config').catch(
    () => null, // optional: spa_trainer.export copies it only when the model folder has one
  );
  const tokenizerConfig = (await readJson(
    join(folder, 'tokenizer_config.json'),
    'tokenizer config',
  )) as object;
  const jinja = await readFile(join(folder, 'chat_template.jinja'), 'utf8').catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null; // older exports keep it in tokenizer_config.json only
      throw error;
    },
  );
  return {
    folder,
    manifest,
    modelPath,
    tokenizerJson: (await readJson(join(folder, 'tokenizer.json'), 'tokenizer')) as object,
    tokenizerConfig,
    generationEosIds: eosIds(generationConfig),
    chatTemplate: chatTemplateOf({ jinja, tokenizerConfig }, folder),
  };
}
