/**
 * Issue 43 item 4: `spa` starts from its build (.setup/cli, scripts/cli-build.mjs), loads only the
 * command it runs, and never runs a build older than its sources. `--help` and a usage error load
 * no Kafka client, ONNX runtime or OpenTelemetry package (they cost about a second of CPU a start).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/main.js';

/**
 * Preloaded into the command (`node --import <this> bin/spa.mjs …`): at exit it prints on stderr
 * the npm packages of require.cache (each of these is CommonJS, so it has files there when loaded,
 * also from an ES module).
 */
const reportPackages = `data:text/javascript,${encodeURIComponent(`
  import { createRequire } from 'node:module';
  const require = createRequire(process.cwd() + '/');
  process.on('exit', () => {
    const packages = new Set();
    for (const path of Object.keys(require.cache)) {
      const name = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(path)?.[1];
      if (name) packages.add(name);
    }
    process.stderr.write('[packages] ' + JSON.stringify([...packages].sort()) + '\\n');
  });
`)}`;

/** Runs `spa <args>`; its exit code, stderr and the npm packages it loaded. */
function spa(args: readonly string[]) {
  const result = spawnSync(process.execPath, ['--import', reportPackages, 'bin/spa.mjs', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const line = /^\[packages\] (.*)$/m.exec(result.stderr)?.[1];
  return {
    status: result.status,
    stderr: result.stderr,
    packages: line === undefined ? undefined : (JSON.parse(line) as string[]),
  };
}

const HEAVY = /^(kafkajs|onnxruntime-node|@huggingface\/|@opentelemetry\/sdk-|hyparquet)/;

describe('spa start-up', () => {
  // a build from today's sources first: a stale one is rebuilt at start, which loads esbuild
  beforeAll(() => void spa(['--help']), 120_000);

  it('spa --help loads no command module: no npm package beyond commander', () => {
    const run = spa(['--help']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.packages).toEqual([]);
  }, 60_000);

  it('a usage error of spa run loads no Kafka client, ONNX runtime or OpenTelemetry SDK', () => {
    const run = spa(['run', '--sft-epoch', '2']);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain("unknown option '--sft-epoch'");
    expect(run.packages).toBeDefined();
    expect(run.packages!.filter((name) => HEAVY.test(name))).toEqual([]);
  }, 60_000);

  it('lists every command in the top-level help as when all are loaded', async () => {
    const lazy = await buildProgram(() => false);
    const full = await buildProgram();
    expect(lazy.helpInformation()).toBe(full.helpInformation());
    expect(full.commands.map((c) => c.name())).toEqual(lazy.commands.map((c) => c.name()));
  }, 300_000); // buildProgram() loads every command's modules (minutes under vitest on a busy box)

  it('rebuilds a build whose stamp no longer matches a source before running it', () => {
    expect(spa(['--help']).status).toBe(0); // a build from today's sources
    const stampPath = '.setup/cli/stamp.json';
    const stamp = JSON.parse(readFileSync(stampPath, 'utf8')) as {
      inputs: Record<string, { size: number; mtimeMs: number; sha256: string }>;
    };
    const truth = stamp.inputs['cli/main.ts']!;
    // as if cli/main.ts had changed since the build: another content of the same size
    stamp.inputs['cli/main.ts'] = { ...truth, mtimeMs: truth.mtimeMs - 1000, sha256: '0'.repeat(64) };
    writeFileSync(stampPath, JSON.stringify(stamp));
    const run = spa(['--help']);
    expect(run.status, run.stderr).toBe(0);
    const rebuilt = JSON.parse(readFileSync(stampPath, 'utf8')) as typeof stamp;
    expect(rebuilt.inputs['cli/main.ts']!.sha256).toBe(truth.sha256);
  }, 60_000);
});
