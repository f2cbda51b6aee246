/**
 * Telemetry through the Node SDK, as a user runs it (issue 35): `spa generate` with
 * `OTEL_TRACES_EXPORTER=console` prints its spans, and with no telemetry variable set it loads
 * no SDK package at all, only the API (and `core`'s W3C propagator and the semantic conventions'
 * names, which the Kafka headers and spans use).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const folder = mkdtempSync(join(tmpdir(), 'spa-sdk-loading-'));

/**
 * Preloaded into the command (`node --import <this> bin/spa.mjs …`): at exit it prints on stderr
 * which @opentelemetry/* packages the process loaded. The SDK packages are CommonJS, so each one
 * loaded has files in require.cache, also when it was imported from an ES module.
 */
const reportOtelModules = `data:text/javascript,${encodeURIComponent(`
  import { createRequire } from 'node:module';
  const require = createRequire(process.cwd() + '/');
  process.on('exit', () => {
    const packages = new Set();
    for (const path of Object.keys(require.cache)) {
      const name = /node_modules\\/(@opentelemetry\\/[^/]+)\\//.exec(path)?.[1];
      if (name) packages.add(name);
    }
    process.stderr.write('[otel-modules] ' + JSON.stringify([...packages].sort()) + '\\n');
  });
`)}`;
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The process environment without any OTEL_* or SPA_* telemetry variable. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(OTEL_|SPA_TRACE|SPA_OTEL)/.test(name)),
  );
}

/** Runs `spa generate` (2 groups, 1 batch, JSONL) and returns its output and the @opentelemetry packages it loaded. */
function generate(variables: Record<string, string>) {
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      reportOtelModules,
      'bin/spa.mjs',
      'generate',
      ...['--env', 'sokoban', '--policy', 'random', '--groups', '2', '--batches', '1'],
      ...['--out', join(folder, 'x.jsonl')],
    ],
    { env: { ...cleanEnvironment(), ...variables }, encoding: 'utf8', timeout: 120_000 },
  );
  const line = /^\[otel-modules\] (.*)$/m.exec(result.stderr)?.[1];
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    packages: line === undefined ? undefined : (JSON.parse(line) as string[]),
  };
}

describe('spa generate and the Node SDK', () => {
  it('with no telemetry variable set, loads no @opentelemetry/sdk-* or exporter package', () => {
    const run = generate({});
    expect(run.status, run.stderr).toBe(0);
    expect(run.packages).toEqual([
      '@opentelemetry/api',
      '@opentelemetry/core',
      '@opentelemetry/semantic-conventions',
    ]);
    expect(run.stdout).not.toContain('traceId');
  });

  it('OTEL_TRACES_EXPORTER=console prints the episode spans through the Node SDK', () => {
    const run = generate({ OTEL_TRACES_EXPORTER: 'console' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.packages).toContain('@opentelemetry/sdk-node');
    // 2 groups × 8 episodes, every one traced by default (parentbased_always_on, under the cap).
    expect(run.stdout.match(/^ {2}name: 'episode',$/gm)).toHaveLength(16);
    expect(run.stdout).toMatch(/'service\.name': 'spa-generator'/);
    // The command's summary stays the last line of stdout.
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toMatchObject({ counts: { trajectories: 16 } });
  });

  it('OTEL_SDK_DISABLED=true keeps the SDK unloaded whatever else is set', () => {
    const run = generate({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'console' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.packages).not.toContain('@opentelemetry/sdk-node');
    expect(run.stderr).toContain('[telemetry] off: OTEL_SDK_DISABLED=true');
  });
});
