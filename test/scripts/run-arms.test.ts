import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runArms, type ArmPlan } from '../../scripts/run-arms.js';

/**
 * A stand-in arm: a Node program that logs its start time, waits `wait` ms, writes `marker` (if
 * any), waits `wait` ms more, writes its summary and exits with `code`.
 */
function arm(
  dir: string,
  name: string,
  opts: { wait: number; marker?: string; code?: number; after?: { arm: string; marker: string } },
): ArmPlan<string> {
  const summary = join(dir, `${name}.json`);
  const program = `
    const fs = require('node:fs');
    const started = Date.now();
    console.log('started');
    process.stderr.write('50%\\r');
    setTimeout(() => {
      ${opts.marker ? `fs.writeFileSync(${JSON.stringify(opts.marker)}, '{}');` : ''}
      setTimeout(() => {
        fs.writeFileSync(${JSON.stringify(summary)}, JSON.stringify({ started, ended: Date.now() }));
        process.exit(${opts.code ?? 0});
      }, ${opts.wait});
    }, ${opts.wait});`;
  return {
    arm: name,
    command: [process.execPath, '-e', program],
    summary,
    ...(opts.after ? { after: opts.after } : {}),
  };
}

const collect = (stream: PassThrough) => {
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return () => text;
};

describe('runArms', () => {
  it('starts an arm once its marker exists, beside the arm that wrote it, and returns the summaries in order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-arms-'));
    const marker = join(dir, 'sft.json');
    const [stdout, stderr] = [new PassThrough(), new PassThrough()];
    const [out, err] = [collect(stdout), collect(stderr)];
    const plans = [
      arm(dir, 'wm', { wait: 1_000, marker }),
      arm(dir, 'wm-control', { wait: 100, after: { arm: 'wm', marker } }),
    ];
    const results = await runArms(plans, { parallel: 2, pollMs: 20, stdout, stderr });
    expect([...results.keys()]).toEqual(['wm', 'wm-control']);
    const [wm, control] = [...results.values()] as { started: number; ended: number }[];
    expect(control!.started).toBeGreaterThanOrEqual(wm!.started + 1_000); // not before the marker
    expect(control!.started).toBeLessThan(wm!.ended); // while wm still ran
    expect(out()).toContain('[wm] started\n');
    expect(out()).toContain('[wm-control] started\n');
    expect(err()).toContain('[wm] 50%\r');
  });

  it('runs one arm at a time with parallel 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-arms-'));
    const plans = [arm(dir, 'ppo', { wait: 100 }), arm(dir, 'control', { wait: 100 })];
    const sink = new PassThrough().resume();
    const results = await runArms(plans, { parallel: 1, pollMs: 20, stdout: sink, stderr: sink });
    const [first, second] = [...results.values()] as { started: number; ended: number }[];
    expect(second!.started).toBeGreaterThanOrEqual(first!.ended);
  });

  it('fails when an arm fails, and stops the arms still running', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-arms-'));
    const plans = [arm(dir, 'wm', { wait: 50, code: 3 }), arm(dir, 'control', { wait: 1_500 })];
    const sink = new PassThrough().resume();
    await expect(runArms(plans, { parallel: 2, pollMs: 20, stdout: sink, stderr: sink })).rejects.toThrow(
      'arm wm exited with 3',
    );
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(existsSync(join(dir, 'control.json'))).toBe(false); // stopped before it wrote its summary
  });

  it('fails when the arm another one waits for ends without writing its marker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-arms-'));
    const marker = join(dir, 'never.json');
    const plans = [
      arm(dir, 'wm', { wait: 20 }),
      arm(dir, 'wm-control', { wait: 20, after: { arm: 'wm', marker } }),
    ];
    const sink = new PassThrough().resume();
    await expect(runArms(plans, { parallel: 2, pollMs: 20, stdout: sink, stderr: sink })).rejects.toThrow(
      `arm wm-control: arm wm ended without ${marker}`,
    );
    expect(JSON.parse(readFileSync(join(dir, 'wm.json'), 'utf8'))).toHaveProperty('ended');
  });
});
