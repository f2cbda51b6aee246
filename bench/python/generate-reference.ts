/**
 * TypeScript side of `generate_reference.py`: runs it in the trainer's venv (JSON in on stdin,
 * JSON out on the last stdout line) and builds the real SPA prompts both the ONNX-policy tests
 * and `npm run bench -- generate` feed to it (policies/onnx/sample-prompts.ts).
 */
import { createInterface } from 'node:readline';
import { callPython, spawnPython } from './venv.js';

const SCRIPT = 'generate_reference.py';

/** The test/bench policy: a Hugging Face folder and its exported artifact folder. */
export interface ReferenceFixture {
  readonly model_dir: string;
  readonly artifact: string;
}

/** `generate_reference.py <command> [args]` with `input` as JSON on stdin; its JSON answer. */
export function callReference<T>(
  command: string,
  args: readonly string[] = [],
  input: unknown = {},
): Promise<T> {
  return callPython<T>(SCRIPT, [command, ...args], input);
}

/**
 * The cached test policy (built on first use, ~30 s; keyed by the trainer sources), or with
 * `size` '25m' the generate bench's larger model (generate_reference.py's SIZES; ~2 min to build).
 */
export function referenceFixture(size: 'tiny' | '25m' = 'tiny'): Promise<ReferenceFixture> {
  return callReference<ReferenceFixture>('fixture', ['--size', size]);
}

/** A running `generate_reference.py serve`: one JSON request line in, one JSON line out. */
export interface ReferenceServer {
  request<T>(message: unknown): Promise<T>;
  close(): Promise<void>;
}

/**
 * Starts `generate_reference.py serve --artifact A` with `prompts`, for timings taken in strict
 * alternation with this process (a shared machine's load drifts between separate runs).
 */
export async function referenceServer(
  artifact: string,
  prompts: readonly string[],
): Promise<ReferenceServer> {
  const child = await spawnPython(SCRIPT, ['serve', '--artifact', artifact]);
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const line = await lines.next();
    if (line.done) throw new Error(`generate_reference.py serve ended:\n${err.slice(-2000)}`);
    return JSON.parse(line.value) as T;
  };
  const request = <T>(message: unknown): Promise<T> => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
    return next<T>();
  };
  await request<{ ready: boolean }>({ prompts });
  const close = () =>
    new Promise<void>((resolve) => {
      child.on('close', () => resolve());
      child.stdin.end();
    });
  return { request, close };
}
