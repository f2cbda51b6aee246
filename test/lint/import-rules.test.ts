/**
 * The rooms of issue 34 as `npm run lint:deps` enforces them: .dependency-cruiser.cjs runs on a
 * small tree whose files each keep or break one rule, so a rule that stops firing (or fires on
 * an allowed import) fails here rather than letting the layers drift unnoticed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Files of the tree: each import is allowed or not by one rule. */
const TREE: Record<string, string> = {
  'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' } }),
  'envs/rng.ts': 'export const rng = 1;',
  'streams/pipeline.ts': "import { rng } from '../envs/rng.js';\nexport const pipeline = rng;",
  'policies/planner.ts': "import { rng } from '../envs/rng.js';\nexport const planner = rng;",
  'policies/follows-kafka.ts':
    "import { pipeline } from '../streams/pipeline.js';\nexport const f = pipeline;",
  'policies/onnx/session.ts':
    "import 'onnxruntime-node';\nimport 'protobufjs';\nimport '@huggingface/tokenizers';",
  'streams/runs-onnx.ts': "import 'onnxruntime-node';",
  'cli/decodes-onnx.ts': "import 'protobufjs';",
  'web/server/tokenizes.ts': "import '@huggingface/tokenizers';",
  'web/server/tap.ts': "import { pipeline } from '../../streams/pipeline.js';\nexport const tap = pipeline;",
  'streams/serves.ts': "import { tap } from '../web/server/tap.js';\nexport const s = tap;",
  'cli/tap.ts':
    "import { tap } from '../web/server/tap.js';\nimport { planner } from '../policies/planner.js';\nexport const c = [tap, planner];",
  'bench/generate.ts': "import 'onnxruntime-node';",
  'infra/kafka/client/sink.ts': "import 'kafkajs';\nexport const sink = 1;",
  'infra/kafka/topics.ts': "import 'kafkajs';",
  'streams/kafka/source.ts': "import 'kafkajs';",
  'loop/data-stage.ts': "import { sink } from '../infra/kafka/client/sink.js';\nexport const d = sink;",
  'test/cuts-sockets.ts': "import 'kafkajs';",
};

/** Stand-ins for the packages, so the tree resolves them as node_modules/<name>/. */
const PACKAGES = ['onnxruntime-node', 'protobufjs', '@huggingface/tokenizers', 'kafkajs'];

interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: { readonly name: string };
}

let dir: string;
let violations: Violation[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'import-rules-'));
  for (const [path, text] of Object.entries(TREE)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  for (const name of PACKAGES) {
    mkdirSync(join(dir, 'node_modules', name), { recursive: true });
    writeFileSync(
      join(dir, 'node_modules', name, 'package.json'),
      JSON.stringify({ name, main: 'index.js' }),
    );
    writeFileSync(join(dir, 'node_modules', name, 'index.js'), '');
  }
  const cruiser = join(repo, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
  const config = join(repo, '.dependency-cruiser.cjs');
  const folders = ['envs', 'policies', 'infra', 'streams', 'web', 'loop', 'cli', 'bench', 'test'];
  // Exits non-zero when it finds violations, which is what this tree is for.
  const run = spawnSync(
    process.execPath,
    [cruiser, ...folders, '--config', config, '--output-type', 'json'],
    {
      cwd: dir,
      encoding: 'utf8',
    },
  );
  const result = JSON.parse(run.stdout) as { summary: { violations: Violation[] } };
  violations = result.summary.violations;
}, 60_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The rules `from` breaks, by name. */
function broken(from: string): string[] {
  return violations.filter((v) => v.from === from).map((v) => v.rule.name);
}

describe('.dependency-cruiser.cjs', () => {
  it('policies/ imports envs/ but not streams/', () => {
    expect(broken('policies/planner.ts')).toEqual([]);
    expect(broken('policies/follows-kafka.ts')).toEqual(['policies-imports-only-envs-schemas']);
  });

  it('onnxruntime-node, protobufjs and @huggingface/tokenizers are imported only in policies/onnx/ (and bench/)', () => {
    expect(broken('policies/onnx/session.ts')).toEqual([]);
    expect(broken('bench/generate.ts')).toEqual([]);
    for (const outside of ['streams/runs-onnx.ts', 'cli/decodes-onnx.ts', 'web/server/tokenizes.ts']) {
      expect(broken(outside), outside).toEqual(['onnx-libraries-stay-in-policies-onnx']);
    }
  });

  it('kafkajs is imported only in infra/kafka/client/ (and test/); loop/ may import infra/', () => {
    expect(broken('infra/kafka/client/sink.ts')).toEqual([]);
    expect(broken('test/cuts-sockets.ts')).toEqual([]);
    expect(broken('loop/data-stage.ts')).toEqual([]);
    for (const outside of ['infra/kafka/topics.ts', 'streams/kafka/source.ts']) {
      expect(broken(outside), outside).toEqual(['kafka-client-stays-in-infra-kafka-client']);
    }
  });

  it('web/ sits above streams/ and below cli/', () => {
    expect(broken('web/server/tap.ts')).toEqual([]);
    expect(broken('cli/tap.ts')).toEqual([]);
    expect(broken('streams/serves.ts')).toEqual([
      'streams-imports-only-envs-schemas-policies-operators-infra',
    ]);
  });
});
