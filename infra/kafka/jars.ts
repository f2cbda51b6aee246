/**
 * Provisions the Apache Kafka jars from Maven Central (infra/kafka/pom.xml) into the
 * git-ignored `infra/kafka/dist/libs/<version>`, lazily, on first use. Needs only Java 17 and
 * Maven. The version is pom.xml's unless SPA_KAFKA_VERSION or a caller names another (the 3.9
 * line stays tested for users on older clusters); each version keeps its own folder.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Folder holding pom.xml, the log configs and the git-ignored dist/ and data/ folders. */
export const kafkaInfraDir = dirname(fileURLToPath(import.meta.url));

const pomPath = join(kafkaInfraDir, 'pom.xml');

/** The Kafka version pinned in pom.xml (`<kafka.version>`), the single place the default is written. */
export function pinnedKafkaVersion(): string {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(pomPath, 'utf8'));
  if (!match?.[1]) throw new Error(`${pomPath} has no <kafka.version> property; add one, e.g. 4.1.1`);
  return match[1];
}

/**
 * The Kafka version to run: `requested`, else `$SPA_KAFKA_VERSION`, else pom.xml's. Only the
 * 3.x (3.3 and later: KRaft without ZooKeeper) and 4.x lines are accepted, as pom.xml knows
 * their logging backends.
 */
export function kafkaVersion(requested?: string, env: NodeJS.ProcessEnv = process.env): string {
  const version = requested ?? (env.SPA_KAFKA_VERSION?.trim() || pinnedKafkaVersion());
  if (!/^(3\.([3-9]|\d{2,})|4\.\d+)\.\d+$/.test(version))
    throw new Error(
      `SPA_KAFKA_VERSION=${version}: expected an Apache Kafka release of the 3.x line (3.3.0 or later) or the 4.x line, e.g. ${pinnedKafkaVersion()}`,
    );
  return version;
}

/** Where one version's jars live. */
export function jarsDir(version = kafkaVersion()): string {
  return join(kafkaInfraDir, 'dist', 'libs', version);
}

/**
 * The stamp's content: the pom, less the pinned default (moving it leaves other releases' folders
 * valid), and the version the folder was provisioned for.
 */
function pomDigest(version: string): string {
  const pom = readFileSync(pomPath, 'utf8').replace(/<kafka\.version>[^<]*<\/kafka\.version>/, '');
  return createHash('sha256').update(pom).update(`\0${version}`).digest('hex');
}

/** True when `version`'s folder was provisioned from the current pom.xml. */
export function jarsProvisioned(version = kafkaVersion()): boolean {
  const stamp = join(jarsDir(version), '.provisioned');
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === pomDigest(version);
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
 * Makes sure `version`'s folder holds the jars pom.xml names for it and returns the folder.
 * Maven checks every artifact against Maven Central's checksum and fails on a mismatch
 * (`--strict-checksums`). Copies into a temporary folder first and renames it into place, so a
 * concurrent or interrupted run never leaves a half-filled classpath behind. Once provisioned,
 * nothing is downloaded again (Maven's ~/.m2 also keeps the artifacts).
 */
export async function ensureJars(
  log: (line: string) => void = () => {},
  version = kafkaVersion(),
): Promise<string> {
  const libsDir = jarsDir(version);
  if (jarsProvisioned(version)) return libsDir;
  const staging = `${libsDir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  log(`[kafka] provisioning Apache Kafka ${version} jars from Maven Central (one-time, ~1 min)…`);
  const started = Date.now();
  await runMaven([
    '-q',
    '-B',
    '--strict-checksums',
    `-Dkafka.version=${version}`,
    // Kafka 3.x logs to log4j 1 (reload4j), 4.x to log4j 2: pom.xml's profiles pick the backend.
    ...(version.startsWith('3.') ? ['-Pkafka-3'] : []),
    'dependency:copy-dependencies',
    `-DoutputDirectory=${staging}`,
    '-DincludeScope=runtime',
  ]);
  writeFileSync(join(staging, '.provisioned'), pomDigest(version));
  if (!jarsProvisioned(version)) {
    rmSync(libsDir, { recursive: true, force: true });
    try {
      renameSync(staging, libsDir);
    } catch (error) {
      // Another process won the race and put an equally good copy in place.
      if (!jarsProvisioned(version)) throw error;
    }
  }
  rmSync(staging, { recursive: true, force: true });
  log(`[kafka] jars ready in ${libsDir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return libsDir;
}

/** The JVM classpath (`dist/libs/<version>/*`) after provisioning. */
export async function kafkaClasspath(
  log?: (line: string) => void,
  version = kafkaVersion(),
): Promise<string> {
  return join(await ensureJars(log, version), '*');
}
