/**
 * Kafka's own command-line tools, run from the same jars as the broker (no Kafka tarball):
 * storage formatting, topics admin and the producer/consumer performance tools for benchmarks.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { kafkaClasspath, kafkaInfraDir, kafkaVersion } from './jars.js';

/** Main classes of the tools in Apache Kafka 4.x (what bin/kafka-*.sh would run). */
const kafkaToolClasses = {
  /** kafka-storage.sh */
  storage: 'kafka.tools.StorageTool',
  /** kafka-topics.sh */
  topics: 'org.apache.kafka.tools.TopicCommand',
  /** kafka-configs.sh (e.g. SCRAM users on a running cluster); 3.x had it in kafka.admin. */
  configs: 'org.apache.kafka.tools.ConfigCommand',
  /** kafka-producer-perf-test.sh */
  producerPerf: 'org.apache.kafka.tools.ProducerPerformance',
  /** kafka-consumer-perf-test.sh */
  consumerPerf: 'org.apache.kafka.tools.ConsumerPerformance',
} as const;

/** A tool name from {@link kafkaToolClasses}. */
export type KafkaTool = keyof typeof kafkaToolClasses;

/** What a finished tool run printed. */
export interface ToolResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The `java` executable: `$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on PATH. */
export function javaExecutable(): string {
  return process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/**
 * JVM flags shared by the broker and the tools: the quiet log config (log4j 1 reads the first,
 * Kafka 3.x; log4j 2 the second, Kafka 4.x), headless, small heap.
 */
export function jvmFlags(logsDir: string, heap: string): string[] {
  return [
    ...heap.split(/\s+/).filter(Boolean),
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${join(kafkaInfraDir, 'log4j.properties')}`,
    `-Dlog4j2.configurationFile=${join(kafkaInfraDir, 'log4j2.properties')}`,
    `-Dkafka.logs.dir=${logsDir}`,
  ];
}

/**
 * Runs one Kafka tool (of `options.kafkaVersion`, default {@link kafkaVersion}'s) to completion
 * and returns its output. Rejects only when the JVM cannot
 * be launched or the run exceeds `timeoutMs`; a non-zero exit is reported in the result.
 */
export async function runKafkaTool(
  tool: KafkaTool,
  args: readonly string[],
  options: { timeoutMs?: number; logsDir?: string; kafkaVersion?: string } = {},
): Promise<ToolResult> {
  const version = kafkaVersion(options.kafkaVersion);
  const classpath = await kafkaClasspath((line) => console.error(line), version);
  const logsDir = options.logsDir ?? join(kafkaInfraDir, 'data', 'tools');
  const main =
    tool === 'configs' && version.startsWith('3.') ? 'kafka.admin.ConfigCommand' : kafkaToolClasses[tool];
  const argv = [...jvmFlags(logsDir, '-Xmx256m'), '-cp', classpath, main, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(javaExecutable(), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`Kafka tool ${tool} timed out after ${options.timeoutMs} ms: ${args.join(' ')}`));
    }, options.timeoutMs ?? 120_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot launch ${javaExecutable()} for Kafka tool ${tool}: ${error.message}`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code ?? 1, stdout, stderr });
    });
  });
}
