/**
 * The system browser for browser tests: Debian's chromium at /usr/bin/chromium, installed with
 * apt-get when missing (CI runs as root on a fresh machine; nothing is downloaded from a
 * browser vendor). playwright-core drives it through `executablePath`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Where Debian's chromium package puts the browser. */
const CHROMIUM_PATH = '/usr/bin/chromium';

function apt(args: string[]): void {
  execFileSync('apt-get', args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    timeout: 600_000,
  });
}

/** Installs Debian's chromium when it is missing; throws saying what failed and what to run. */
function ensureChromium(): string {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  try {
    // Wait for another apt/dpkg run (up to 5 min) instead of failing on its lock.
    apt(['-o', 'DPkg::Lock::Timeout=300', 'update']);
    apt(['-o', 'DPkg::Lock::Timeout=300', 'install', '-y', 'chromium']);
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().slice(-2000) ?? '';
    throw new Error(
      `cannot install Debian's chromium (needed at ${CHROMIUM_PATH} for the browser test): ` +
        `${(error as Error).message}\n${stderr}\nRun as root: apt-get update && apt-get install -y chromium`,
    );
  }
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(`apt-get installed chromium but ${CHROMIUM_PATH} is missing; check the chromium package`);
  return CHROMIUM_PATH;
}

/**
 * Launches the system chromium headless with a fresh profile (a new temp folder; playwright
 * takes the profile as `userDataDir`, not as a `--user-data-dir` argument) and no background
 * network. Closing the context closes the browser.
 */
export async function launchChromium(): Promise<BrowserContext> {
  const executablePath = ensureChromium();
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'spa-chromium-')), {
    executablePath,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
