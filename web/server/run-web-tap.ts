/**
 * The command side of `spa tap --web`: starts the web tap, prints the page's address (token
 * included) and runs until Ctrl-C / SIGTERM or until a topic read fails.
 */
import { firstValueFrom, fromEvent, merge, take } from 'rxjs';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import type { TapFilter } from '../../streams/kafka/tap-filter.js';
import { startWebTap } from './web-tap.js';

/** Options of {@link runWebTap}. */
export interface RunWebTapOptions {
  readonly topics: readonly string[];
  readonly start: 'earliest' | 'latest';
  readonly port: number;
  readonly filters: readonly TapFilter[];
  /** Where the address and status lines go (stdout for the address, so scripts can read it). */
  readonly print: (line: string) => void;
  readonly log: (line: string) => void;
}

/** Serves the page until a stop signal; rejects when a topic read fails. */
export async function runWebTap(kafka: KafkaConnection, options: RunWebTapOptions): Promise<void> {
  const tap = await startWebTap(kafka, {
    topics: options.topics,
    start: options.start,
    port: options.port,
    filters: options.filters,
    log: options.log,
  });
  options.print(`spa tap --web: open ${tap.url}`);
  options.log(`[tap] serving ${options.topics.join(', ')} on 127.0.0.1 only; Ctrl-C stops`);
  const stopSignal = firstValueFrom(
    merge(fromEvent(process, 'SIGINT'), fromEvent(process, 'SIGTERM')).pipe(take(1)),
  );
  try {
    await Promise.race([stopSignal, tap.failed]);
  } finally {
    await tap.stop();
    options.log('[tap] web tap stopped');
  }
}
