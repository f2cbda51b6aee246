#!/usr/bin/env node
// Idempotent provisioning for a fresh clone: npm dependencies, the CLI's build (.setup/cli,
// scripts/cli-build.mjs) and the steps named as arguments (python: the trainer's venv; kafka: the
// broker's jars), one line each (scripts/setup-step.mjs; the tools' output goes to
// .setup/setup.log). Written in plain Node with no dependencies
// because it runs before `npm ci` has installed anything.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logged, step } from './setup-step.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampDir = join(root, '.setup');

function stamp(name, inputs) {
  const hash = createHash('sha256');
  for (const f of inputs) hash.update(existsSync(f) ? readFileSync(f) : '');
  const digest = hash.digest('hex');
  const file = join(stampDir, name);
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  return {
    fresh: current === digest,
    save: () => (mkdirSync(stampDir, { recursive: true }), writeFileSync(file, digest)),
  };
}

// onnxruntime-node downloads CUDA files at install time and fails offline; skip both
// (older releases read only the CUDA variable). GPU users can reinstall without these.
const npmEnv = { ONNXRUNTIME_NODE_INSTALL: 'skip', ONNXRUNTIME_NODE_INSTALL_CUDA: 'skip' };

// patches/ holds fixes to dependencies that npm's postinstall applies (patch-package).
const patches = existsSync(join(root, 'patches'))
  ? readdirSync(join(root, 'patches')).map((name) => join(root, 'patches', name))
  : [];
const npmStamp = stamp('npm', [join(root, 'package-lock.json'), ...patches]);
step('npm', () => {
  if (npmStamp.fresh && existsSync(join(root, 'node_modules'))) return 'up to date';
  logged('npm', ['ci', '--no-audit', '--no-fund'], npmEnv);
  npmStamp.save();
  return 'installed (npm ci)';
});

// The CLI runs from its build; a stale one is rebuilt here once rather than by the first `spa`.
const { freshCli } = await import('./cli-build.mjs');
await freshCli({ prune: true });

const steps = process.argv.slice(2);
for (const step of steps) {
  const module = join(root, 'scripts', `setup-${step}.mjs`);
  if (!existsSync(module))
    throw new Error(`unknown setup step "${step}" (expected scripts/setup-${step}.mjs)`);
  await import(module);
}
