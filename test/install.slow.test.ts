import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};

describe('a production install (npm install --omit=dev)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spa-omit-dev-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('pins every patched package to the exact version its patch was made for', () => {
    for (const patch of readdirSync(join(root, 'patches'))) {
      const [, name, version] = /^(.+)\+(\d+\.\d+\.\d+)\.patch$/.exec(patch) ?? [];
      expect(packageJson.dependencies[name!], patch).toBe(version);
    }
  });

  it('runs the postinstall and applies the patches without dev dependencies', () => {
    cpSync(join(root, 'package.json'), join(dir, 'package.json'));
    cpSync(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
    cpSync(join(root, 'patches'), join(dir, 'patches'), { recursive: true });
    // The cache holds every package after the repository's own install, so this needs no network.
    execFileSync('npm', ['install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', ONNXRUNTIME_NODE_INSTALL_CUDA: 'skip' },
      stdio: 'pipe',
    });
    const eos = readFileSync(join(dir, 'node_modules/kafkajs/src/producer/eosManager/index.js'), 'utf8');
    expect(eos).toContain('END_TXN_LOOKUP_ERRORS'); // a line only the patch adds
    expect(readdirSync(join(dir, 'node_modules'))).not.toContain('vitest');
  });
});
