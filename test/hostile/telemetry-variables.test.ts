/**
 * A bad telemetry variable or flag (`OTEL_*`, `--otlp-endpoint`) is a usage error, as a user runs
 * the CLI: `spa generate` and `spa run` stop before any work with one line naming it and exit
 * code 2, like a flag out of range (cli/options.ts), not 1 with a stack trace. Spawned as
 * test/telemetry/sdk-loading.test.ts does.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const folder = mkdtempSync(join(tmpdir(), 'spa-telemetry-variables-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The process environment without any OTEL_* or SPA_* telemetry variable. */
function cleanEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(OTEL_|SPA_TRACE|SPA_OTEL)/.test(name)),
  );
}

function spa(args: readonly string[], variables: Record<string, string>) {
  const result = spawnSync(process.execPath, ['bin/spa.mjs', ...args], {
    env: { ...cleanEnvironment(), ...variables },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stderr: result.stderr.trim() };
}

const generate = ['generate', '--env', 'sokoban', '--policy', 'random', '--groups', '2', '--batches', '1'];

describe('a bad telemetry setting exits 2 with one line naming it', () => {
  it.each([
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, [], 'OTEL_TRACES_EXPORTER="jaeger": use otlp, console'],
    [{ OTEL_METRICS_EXPORTER: 'statsd' }, [], 'OTEL_METRICS_EXPORTER="statsd": use otlp'],
    [{ OTEL_TRACES_SAMPLER: 'xray' }, [], 'OTEL_TRACES_SAMPLER="xray" is not supported'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'udp' }, [], 'OTEL_EXPORTER_OTLP_PROTOCOL="udp" must be one of'],
    [{}, ['--otlp-endpoint', 'collector:4318'], '--otlp-endpoint "collector:4318" must be an http(s) URL'],
  ])('spa generate with %o %o', (variables, flags, message) => {
    const out = join(folder, `${message.split(/[ =]/)[0]}.jsonl`);
    const { status, stderr } = spa([...generate, '--out', out, ...flags], variables);
    expect(stderr).toBe(stderr.split('\n')[0]);
    expect(stderr).toContain(`spa: ${message}`);
    expect(status).toBe(2);
    expect(existsSync(out)).toBe(false);
  });

  it('spa run, before a broker or a model is touched', () => {
    const runsDir = join(folder, 'runs');
    const { status, stderr } = spa(['run', '--runs-dir', runsDir], {
      OTEL_TRACES_SAMPLER_ARG: '2',
      OTEL_TRACES_SAMPLER: 'traceidratio',
    });
    expect(stderr).toBe('spa: OTEL_TRACES_SAMPLER_ARG="2" must be a number in 0..1 for traceidratio');
    expect(status).toBe(2);
    expect(existsSync(runsDir)).toBe(false);
  });
});
