/**
 * Sokoban generator throughput and filter statistics, for the envs bench suite:
 * `measureSokobanGeneration(variant, firstSeed, count)` → rooms/s, rejection rate and
 * the BFS solution-length histogram; `run(args)` prints it for each variant.
 */
import { performance } from 'node:perf_hooks';
import { generateRoom } from '../envs/sokoban/generator.js';
import { SOKOBAN_VARIANTS, sokobanVariant, type SokobanVariant } from '../envs/sokoban/variants.js';

/** What one generation run measured. */
export interface SokobanGenerationStats {
  readonly variant: string;
  readonly rooms: number;
  readonly roomsPerSecond: number;
  /** Generated rooms thrown away for a too-long shortest solution, per generated room. */
  readonly rejectionRate: number;
  /** Seeds whose first derived seed was rejected, per seed. */
  readonly seedsRetried: number;
  readonly meanSolutionLength: number;
  readonly histogram: Readonly<Record<number, number>>;
}

/** Generate `count` rooms from seeds `firstSeed…` with the default solution-length filter. */
export function measureSokobanGeneration(
  variant: SokobanVariant,
  firstSeed: number,
  count: number,
): SokobanGenerationStats {
  const histogram: Record<number, number> = {};
  let rejected = 0;
  let retried = 0;
  let lengthSum = 0;
  const start = performance.now();
  for (let seed = firstSeed; seed < firstSeed + count; seed++) {
    const room = generateRoom(seed, variant);
    rejected += room.rejectedTooLong;
    if (room.rejectedTooLong > 0) retried++;
    const length = room.solutionLength ?? 0;
    lengthSum += length;
    histogram[length] = (histogram[length] ?? 0) + 1;
  }
  const seconds = (performance.now() - start) / 1000;
  return {
    variant: variant.name,
    rooms: count,
    roomsPerSecond: count / seconds,
    rejectionRate: rejected / (count + rejected),
    seedsRetried: retried / count,
    meanSolutionLength: lengthSum / count,
    histogram,
  };
}

/** `npm run bench -- envs-sokoban [variant] [count]`. */
export async function run(args: string[]): Promise<void> {
  const [name, countText] = args;
  const variants = name ? [sokobanVariant(name)] : Object.values(SOKOBAN_VARIANTS);
  const count = countText ? Number(countText) : 1000;
  for (const variant of variants) {
    console.log(JSON.stringify(measureSokobanGeneration(variant, 0, count)));
  }
}
