/**
 * Provisions the Apache Kafka jars from Maven Central (infra/kafka/pom.xml) into the
 * git-ignored `infra/kafka/dist/libs`, lazily, on first use. Needs only Java 17 and Maven.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folder holding pom.xml, log4j.properties and the git-ignored dist/ and data/ folders. */
export const kafkaInfraDir = dirname(fileURLToPath(import.meta.url));

const pomPath = join(kafkaInfraDir, 'pom.xml');
const libsDir = join(kafkaInfraDir, 'dist', 'libs');
const stampFile = join(libsDir, '.provisioned');

/** The Kafka version pinned in pom.xml (`<kafka.version>`), the single place it is written. */
export function pinnedKafkaVersion(): string {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(pomPath, 'utf8'));
  if (!match?.[1]) throw new Error(`${pomPath} has no <kafka.version> property; add one, e.g. 3.9.1`);
  return match[1];
}

function pomDigest(): string {
  return createHash('sha256').update(readFileSync(pomPath)).digest('hex');
}

/** True when dist/libs was provisioned from the current pom.xml. */
export function jarsProvisioned(): boolean {
  return existsSync(stampFile) && readFileSync(stampFile, 'utf8') === pomDigest();
}

function runMaven(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('mvn', args, { cwd: kafkaInfraDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-8000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', (error) =>
      reject(new Error(`cannot run Maven ("mvn"): ${error.message}; install Maven 3 and Java 17`)),
    );
    child.on('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`mvn ${args.join(' ')} failed with exit code ${code}:\n${output}`));
    });
  });
}

/**
 * Makes sure dist/libs holds the jars named by pom.xml and returns the folder. Copies into a
 * temporary folder first and renames it into place, so a concurrent or interrupted run never
 * leaves a half-filled classpath behind.
 */
export async function ensureJars(log: (line: string) => void = () => {}): Promise<string> {
  if (jarsProvisioned()) return libsDir;
  const version = pinnedKafkaVersion();
  const staging = `${libsDir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  log(`[kafka] provisioning Apache Kafka ${version} jars from Maven Central (one-time, ~1 min)…`);
  const started = Date.now();
  await runMaven([
    '-q',
    '-B',
    'dependency:copy-dependencies',
    `-DoutputDirectory=${staging}`,
    '-DincludeScope=runtime',
  ]);
  writeFileSync(join(staging, '.provisioned'), pomDigest());
  if (!jarsProvisioned()) {
    rmSync(libsDir, { recursive: true, force: true });
    try {
      renameSync(staging, libsDir);
    } catch (error) {
      // Another process won the race and put an equally good copy in place.
      if (!jarsProvisioned()) throw error;
    }
  }
  rmSync(staging, { recursive: true, force: true });
  log(`[kafka] jars ready in ${libsDir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return libsDir;
}

/** The JVM classpath (`dist/libs/*`) after provisioning. */
export async function kafkaClasspath(log?: (line: string) => void): Promise<string> {
  return join(await ensureJars(log), '*');
}
