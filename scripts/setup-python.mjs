#!/usr/bin/env node
// Provisions the trainer's Python environment: a venv at trainer/.venv with the packages of
// trainer/requirements.txt, the trainer source on its path, and a Kafka client. Plain Node, no
// dependencies (it runs on a fresh clone). Idempotent: a stamp over the requirements, the
// pyproject and this script skips the work when nothing changed.
//   node scripts/setup-python.mjs        (or: node scripts/setup.mjs python)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logged, step } from './setup-step.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const trainer = join(root, 'trainer');
const venv = join(trainer, '.venv');
const python = join(venv, 'bin', 'python');
const stampFile = join(root, '.setup', 'python');
// A warning interrupts the step's line on a terminal: it gets its own.
const log = (msg) => console.error(`${process.stderr.isTTY ? '\n' : ''}[setup:python] ${msg}`);

function quiet(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

function digest() {
  const h = createHash('sha256');
  for (const f of ['trainer/requirements.txt', 'trainer/pyproject.toml', 'scripts/setup-python.mjs']) {
    const p = join(root, f);
    h.update(existsSync(p) ? readFileSync(p) : '');
  }
  return h.digest('hex');
}

function basePython() {
  const candidate = process.env.SPA_PYTHON ?? 'python3';
  const r = quiet(candidate, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])']);
  if (!r.ok) throw new Error(`no Python found as "${candidate}" (set SPA_PYTHON to a Python ≥ 3.10)`);
  const [major, minor] = r.out.split('.').map(Number);
  if (major !== 3 || minor < 10) throw new Error(`${candidate} is Python ${r.out}; the trainer needs ≥ 3.10`);
  return candidate;
}

function sitePackages() {
  return quiet(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])']).out;
}

// The Kafka client. Normal route: `pip install confluent-kafka`. Debian machines (this
// project's) have no PyPI, but Debian's python3-confluent-kafka imports from a same-minor
// Python: link only that package into the venv (not all of dist-packages, whose numpy etc.
// would shadow the venv's).
function ensureKafkaClient() {
  if (quiet(python, ['-c', 'import confluent_kafka']).ok) return;
  const debian = '/usr/lib/python3/dist-packages/confluent_kafka';
  if (!existsSync(debian) && existsSync('/usr/bin/apt-get')) {
    try {
      logged('apt-get', ['update']);
      logged('apt-get', ['install', '-y', 'python3-confluent-kafka']);
    } catch (error) {
      log(`apt-get failed (${error.message}); its output is in the setup log`);
    }
  }
  if (existsSync(debian)) {
    const linkDir = join(venv, 'debian-kafka');
    rmSync(linkDir, { recursive: true, force: true });
    mkdirSync(linkDir, { recursive: true });
    symlinkSync(debian, join(linkDir, 'confluent_kafka'));
    writeFileSync(join(sitePackages(), 'spa_debian_kafka.pth'), `${linkDir}\n`);
  }
  if (quiet(python, ['-c', 'import confluent_kafka']).ok) return;
  try {
    logged(python, ['-m', 'pip', 'install', '--retries', '1', 'confluent-kafka']);
    return;
  } catch {
    // reported below
  }
  log('WARNING: no Kafka client; kafka: inputs and PolicyUpdate publishing will fail (file inputs work)');
}

// W&B for `--report-to wandb`. Normal route: `pip install wandb`. This project's wheel index lacks two
// packages under wandb's own usage analytics (opentelemetry-exporter-http-transport, and
// opentelemetry-semantic-conventions under opentelemetry-sdk), which offline mode never loads: then
// wandb and opentelemetry-sdk go in without their dependencies, and wandb's others by name.
const WANDB_DEPS = ['opentelemetry-api>=1.43', 'pydantic>=2.6,<3', 'platformdirs', 'click>=8.2', 'xxhash'];
function ensureWandb() {
  if (quiet(python, ['-c', 'import wandb']).ok) return;
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--retries', '1'];
  try {
    logged(python, [...pip, 'wandb>=0.17']);
    return;
  } catch {
    // the index lacks one of its dependencies: below
  }
  try {
    logged(python, [...pip, '--no-deps', 'wandb>=0.17', 'opentelemetry-sdk>=1.43']);
    logged(python, [...pip, ...WANDB_DEPS]);
  } catch (error) {
    log(`WARNING: no wandb; --report-to wandb will fail (tensorboard works): ${error.message}`);
    return;
  }
  const imported = quiet(python, ['-c', 'import wandb']);
  if (!imported.ok)
    log(
      `WARNING: wandb does not import (${imported.out.trim().split('\n').at(-1)}); --report-to wandb will fail (tensorboard works)`,
    );
}

/** Makes trainer/.venv current; returns what it did, for the step's line. */
function setup() {
  if (!existsSync(python)) logged(basePython(), ['-m', 'venv', venv]);
  const want = digest();
  const have = existsSync(stampFile) ? readFileSync(stampFile, 'utf8') : '';
  if (have === want && quiet(python, ['-c', 'import torch, transformers, spa_trainer']).ok)
    return 'trainer/.venv up to date';
  logged(python, [
    '-m',
    'pip',
    'install',
    '--disable-pip-version-check',
    '--retries',
    '1',
    '-r',
    join(trainer, 'requirements.txt'),
  ]);
  // The trainer source on the venv's path (no build step: the package is plain sources).
  const pth = join(sitePackages(), 'spa_trainer_src.pth');
  const onPath = existsSync(pth) ? readFileSync(pth, 'utf8').trim() : '';
  if (lstatSync(venv).isSymbolicLink() && onPath && onPath !== trainer)
    // A venv shared with another checkout (a git worktree linking it) keeps that checkout's
    // trainer on its path: rewriting it would switch the other checkout's runs to this one's code.
    log(
      `trainer/.venv is shared: it imports spa_trainer from ${onPath}; set PYTHONPATH=${trainer} to use this checkout's`,
    );
  else writeFileSync(pth, `${trainer}\n`);
  ensureKafkaClient();
  ensureWandb();
  const check = quiet(python, [
    '-c',
    'import torch, transformers, onnxruntime, fastavro, tensorboard, matplotlib, spa_trainer; print(torch.__version__)',
  ]);
  if (!check.ok) throw new Error(`trainer venv is broken after install:\n${check.out}`);
  mkdirSync(dirname(stampFile), { recursive: true });
  writeFileSync(stampFile, want);
  const kafka = quiet(python, ['-c', 'import confluent_kafka']).ok ? 'yes' : 'no';
  return `trainer/.venv ready: torch ${check.out.split('\n').pop()}, kafka client ${kafka}`;
}

step('venv', setup);
