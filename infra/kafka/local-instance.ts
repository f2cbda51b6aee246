/**
 * The local broker every command talks to (`npm start`, every `spa` command, `npm run kafka:*`,
 * `spa doctor`), from the environment: KAFKA_INSTANCE (default "default": its data folder
 * infra/kafka/data/<instance>) and KAFKA_PORT (default 9092); KAFKA_BROKERS, when set, names a
 * cluster instead (broker.ts). And whose broker answers on a port when it is not this checkout's:
 * a broker another checkout started on the same port would otherwise be taken for its own.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { BrokerInstanceOptions } from './broker-config.js';

/** The local instance the environment names. A bad KAFKA_PORT throws naming it. */
export function localInstanceFromEnv(env: NodeJS.ProcessEnv = process.env): BrokerInstanceOptions {
  const name = env.KAFKA_INSTANCE?.trim() || 'default';
  const text = env.KAFKA_PORT?.trim();
  if (!text) return { name };
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65534)
    throw new Error(
      `KAFKA_PORT=${text}: expected a port 1..65534 (the broker's controller takes the next one)`,
    );
  return { name, port };
}

/** A Kafka broker process found on this machine: its pid and data folder. */
interface BrokerProcess {
  readonly pid: number;
  /** The folder of the server.properties on its command line (infra/kafka/data/<instance> for ours). */
  readonly dataDir: string;
}

/**
 * The Kafka broker process listening on `port`, found by its command line (`kafka.Kafka
 * <server.properties>`) and that file's `listeners`. Undefined when none is seen (no procfs, or
 * another user's process).
 */
export function kafkaProcessOnPort(port: number, proc = '/proc'): BrokerProcess | undefined {
  if (!existsSync(proc)) return undefined;
  for (const entry of readdirSync(proc)) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`${proc}/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone, or not ours to read
    }
    const properties = argv[argv.indexOf('kafka.Kafka') + 1];
    if (!argv.includes('kafka.Kafka') || !properties || !existsSync(properties)) continue;
    const listeners = /^listeners=(.*)$/m.exec(readFileSync(properties, 'utf8'))?.[1] ?? '';
    if (listeners.split(',').some((l) => l.trim().endsWith(`:${port}`)))
      return { pid: Number(entry), dataDir: dirname(properties) };
  }
  return undefined;
}

/** A broker on the port that is not this checkout's: whose it is, and how to choose another. */
interface ForeignBroker {
  readonly detail: string;
  readonly fix: string;
}

/**
 * What to say when `address` answers as a Kafka broker that is not this checkout's instance
 * `name`: whose it is (its data folder, when its process is seen) and how to choose another.
 */
export function foreignBroker(address: string, name: string, port: number, proc?: string): ForeignBroker {
  const owner = kafkaProcessOnPort(port, proc);
  const whose = owner
    ? `pid ${owner.pid}, data folder ${owner.dataDir}`
    : 'its process is not visible here: another user, a container or another machine';
  return {
    detail: `${address} answers as a Kafka broker this checkout did not start (not instance "${name}"; ${whose})`,
    fix:
      `choose another port and instance for this checkout's own, e.g. KAFKA_PORT=${port + 100} KAFKA_INSTANCE=<name>, ` +
      `or set KAFKA_BROKERS=${address} to use that one`,
  };
}

/** {@link foreignBroker} as one line. */
export function foreignBrokerMessage(address: string, name: string, port: number): string {
  const { detail, fix } = foreignBroker(address, name, port);
  return `${detail}: ${fix}`;
}
