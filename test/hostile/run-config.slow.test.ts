/**
 * Issue 42 item 2 on a real broker: a run records the config it was started with
 * (`<run>/config.json`), and a resume with another env, model or size exits 2 naming each changed
 * field with both values, unless `--allow-config-change` names them; then the run goes on with
 * the new config and records it.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { runSpa, spawnSpa, type SpaResult } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker } from '../kafka/harness.js';

const ports = { port: 19542, controllerPort: 19543 };
let broker: RunningBroker;
let runsDir: string;
let file: string;

beforeAll(async () => {
  broker = await startTestBroker('run-config', ports);
  runsDir = await mkdtemp(join(tmpdir(), 'spa-run-config-'));
  file = join(runsDir, 'tiny.yaml');
  await writeFile(
    file,
    ['generator: oracle', 'sft-groups: 8', 'sft-group-size: 1', 'sft-batches: 1'].join('\n'),
  );
}, 600_000);

afterAll(async () => {
  await stopTestBroker('run-config', ports);
  if (runsDir) await rm(runsDir, { recursive: true, force: true });
});

/**
 * `spa run <flags>` as run `cfg`, sent SIGINT (once) when it starts its first data stage: a start
 * that gets that far ends there, with exit 130, and one that is refused ends before.
 */
async function startStopped(flags: readonly string[]): Promise<SpaResult> {
  const args = ['run', '--config-file', file, ...flags, '--runs-dir', runsDir, '--run-id', 'cfg'];
  const { child, ended } = spawnSpa(args, broker.brokers);
  let text = '';
  let sent = false;
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    if (!sent && /── sft data/.test(text)) sent = child.kill('SIGINT');
  });
  return ended;
}

const recorded = () =>
  JSON.parse(readFileSync(join(runsDir, 'cfg', 'config.json'), 'utf8')) as Record<string, unknown>;

describe('spa run resumed with another config', () => {
  it('refuses the changed fields by name, both values each, unless --allow-config-change names them', async () => {
    const first = await startStopped(['--config', '_3_frozen_lake']);
    expect(first.code, first.stderr.slice(-2000)).toBe(130);
    expect(recorded()).toMatchObject({ name: '_3_frozen_lake', env: 'frozenlake', sftGroups: 8 });

    const changed = ['--config', '_10_sudoku', '--sft-groups', '16'];
    const refused = await startStopped(changed);
    expect(refused.code, refused.stderr.slice(-2000)).toBe(2);
    const configFile = join(runsDir, 'cfg', 'config.json');
    expect(refused.stderr.trim().split('\n')).toEqual([
      `spa: run "cfg" was started with another config (${configFile}): config _3_frozen_lake → _10_sudoku, ` +
        `env frozenlake → sudoku, sft-groups 8 → 16; resume with the flags it was started with, or pass ` +
        `--allow-config-change config,sft-groups to go on with the new values`,
    ]);

    const partly = await startStopped([...changed, '--allow-config-change', 'sft-groups']);
    expect(partly.code).toBe(2);
    expect(partly.stderr).toContain('config _3_frozen_lake → _10_sudoku, env frozenlake → sudoku; resume');
    expect(partly.stderr).not.toContain('sft-groups 8');
    expect(recorded()).toMatchObject({ env: 'frozenlake', sftGroups: 8 });

    const allowed = await startStopped([...changed, '--allow-config-change', 'config,sft-groups']);
    expect(allowed.code, allowed.stderr.slice(-2000)).toBe(130);
    expect(recorded()).toMatchObject({ name: '_10_sudoku', env: 'sudoku', sftGroups: 16 });
  }, 600_000);

  it('refuses an --allow-config-change naming no field, before any work', async () => {
    const result = await runSpa(
      ['run', '--allow-config-change', 'sft-group', '--runs-dir', runsDir],
      broker.brokers,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /no config field "sft-group"; name them as spa run's flags, without the dashes/,
    );
  });
});
