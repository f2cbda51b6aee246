/** The GPU check's table: one row per check, and how it prints (docs/gpu.md). */

/** One check's outcome on one device; `figures` are the measured numbers, `detail` why it failed. */
export interface GpuRow {
  readonly check: string;
  readonly device: string;
  readonly result: 'pass' | 'fail' | 'skipped';
  readonly figures: string;
  readonly detail?: string;
}

/** Something the CUDA path needs that this machine lacks, and the command that provides it. */
export interface GpuNeed {
  readonly what: string;
  readonly fix: string;
}

/** The checks, in the order they run (`--checks` takes these names). */
export const GPU_CHECKS = ['trainer', 'export', 'onnxruntime', 'torchrun', 'run'] as const;
export type GpuCheckName = (typeof GPU_CHECKS)[number];

/** Each check's name in the table (its rows add the model: `trainer sft tiny-local`). */
const LABELS: Readonly<Record<GpuCheckName, string>> = {
  trainer: 'trainer',
  export: 'export',
  onnxruntime: 'onnxruntime',
  torchrun: 'torchrun 2 ranks',
  run: 'spa run',
};

/** The row a check gets when it cannot run here. */
export function skipped(check: GpuCheckName, device: string, why: string): GpuRow {
  return { check: LABELS[check], device, result: 'skipped', figures: `skipped: ${why}` };
}

/** The rows as an aligned table (check, device, result, figures), a failure's detail under it. */
export function formatGpuTable(rows: readonly GpuRow[]): string {
  const header = { check: 'check', device: 'device', result: 'result', figures: 'figures' };
  const width = (key: 'check' | 'device' | 'result') =>
    Math.max(header[key].length, ...rows.map((r) => r[key].length));
  const [c, d, r] = [width('check'), width('device'), width('result')];
  const line = (row: typeof header) =>
    `${row.check.padEnd(c)}  ${row.device.padEnd(d)}  ${row.result.padEnd(r)}  ${row.figures}`.trimEnd();
  return [header, ...rows]
    .map((row) => {
      const detail = 'detail' in row && row.detail ? `\n${' '.repeat(c + d + r + 6)}→ ${row.detail}` : '';
      return line(row) + detail;
    })
    .join('\n');
}

/** The needs as lines, each with its command. */
export function formatNeeds(needs: readonly GpuNeed[]): string {
  if (needs.length === 0) return 'the CUDA path has every piece it needs on this machine';
  return ['the CUDA path needs, on this machine:', ...needs.map((n) => `  - ${n.what}\n      ${n.fix}`)].join(
    '\n',
  );
}
