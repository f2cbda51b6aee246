// The CLI built once into .setup/cli/ (esbuild: one ESM bundle, a chunk per lazily loaded
// command), so `spa` starts without transpiling TypeScript: tsx took about 1 s of CPU per start,
// paid again by every generator shard and evaluation the loop spawns. A stamp lists every source
// file the build read with its size, mtime and sha256; a build whose sources changed is never run:
// bin/spa.mjs rebuilds it (about a second), and falls back to tsx when it cannot.
// Plain Node: bin/spa.mjs and scripts/setup.mjs import it before any TypeScript runs.
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, '.setup', 'cli');
const stampPath = join(outdir, 'stamp.json');
const entry = join(outdir, 'main.mjs');
/** Inputs besides the sources that change the output: this script and the compiler settings. */
const settings = ['scripts/cli-build.mjs', 'tsconfig.json', 'package-lock.json'];

/**
 * Packages loaded from node_modules as they are: native code (onnxruntime-node, tokenizers), the
 * OpenTelemetry SDK (its packages find each other at run time) and the large ones only some
 * commands load. The rest (rxjs, commander, yaml, …) is bundled, cut to what the CLI uses: a CLI
 * start read several hundred of rxjs's files.
 */
const EXTERNAL = [
  'onnxruntime-node',
  '@huggingface/*',
  '@opentelemetry/*',
  'kafkajs',
  'hyparquet-writer',
  'avsc',
  'pure-rand',
  'esbuild',
  'tsx',
];

const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Is `file` (relative to the root) as the stamp saw it? Size and mtime, else its content. */
function unchanged(file, seen) {
  const path = join(root, file);
  if (!existsSync(path)) return false;
  const { size, mtimeMs } = statSync(path);
  if (size !== seen.size) return false;
  return mtimeMs === seen.mtimeMs || sha256(path) === seen.sha256;
}

/** The built entry's file URL when the build in .setup/cli was made from today's sources. */
function currentBuild() {
  if (!existsSync(stampPath) || !existsSync(entry)) return undefined;
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
  } catch {
    return undefined; // a stamp half written by a build killed mid-write: build again
  }
  const fresh = Object.entries(stamp.inputs ?? {}).every(([file, seen]) => unchanged(file, seen));
  return fresh ? pathToFileURL(entry).href : undefined;
}

/**
 * Writes `contents` to `path` through a temporary file and a rename, so a process loading the CLI
 * while another rebuilds it reads the old file or the new one, never a part.
 */
function writeAtomically(path, contents) {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, path);
}

/**
 * Source files locate their data next to themselves (`new URL('.', import.meta.url)`): in the
 * bundle each keeps its own file's URL, written relative to the output so a moved clone still works.
 */
const ownFileUrls = {
  name: 'own-file-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const fromOutput = relative(outdir, args.path).split(sep).join('/');
      const url = `new URL(${JSON.stringify(fromOutput)}, import.meta.url).href`;
      return { contents: source.replaceAll('import.meta.url', url), loader: 'ts' };
    });
  },
};

/**
 * Builds cli/main.ts into .setup/cli (packages stay external: node_modules is loaded as it is) and
 * writes the stamp. Chunks are named by their content's hash and written before the entry, so a
 * running `spa` never loses a chunk it may still import; `prune` removes earlier builds' day-old ones.
 */
async function buildCli({ prune = false } = {}) {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: root,
    entryPoints: { main: 'cli/main.ts' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    // rxjs's ES module build, which the bundle can cut to the operators used (Node's is CommonJS)
    alias: { rxjs: './node_modules/rxjs/dist/esm/index.js' },
    // the bundled CommonJS packages (commander, yaml) require Node's own modules
    banner: {
      js: "import { createRequire as __spaRequire } from 'node:module'; const require = __spaRequire(import.meta.url);",
    },
    outdir,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    sourcemap: 'linked',
    metafile: true,
    write: false,
    logLevel: 'error',
    plugins: [ownFileUrls],
  });
  mkdirSync(outdir, { recursive: true });
  const written = new Set(result.outputFiles.map((f) => f.path));
  const ordered = result.outputFiles.toSorted((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of ordered) writeAtomically(file.path, file.contents);
  const files = [...Object.keys(result.metafile.inputs), ...settings];
  const inputs = Object.fromEntries(
    files.map((file) => {
      const { size, mtimeMs } = statSync(join(root, file));
      return [file, { size, mtimeMs, sha256: sha256(join(root, file)) }];
    }),
  );
  writeAtomically(stampPath, JSON.stringify({ inputs }, null, 1));
  if (prune) pruneOlderBuilds(written);
  return pathToFileURL(entry).href;
}

/** Removes the files of earlier builds not touched for a day (no `spa` still running loads them). */
function pruneOlderBuilds(written) {
  const dayAgo = Date.now() - 24 * 3600 * 1000;
  for (const name of readdirSync(outdir)) {
    const path = join(outdir, name);
    if (!written.has(path) && name !== 'stamp.json' && statSync(path).mtimeMs < dayAgo)
      rmSync(path, { force: true });
  }
}

/**
 * The URL of a CLI built from today's sources: the existing build, or a new one (with `prune`,
 * earlier builds' day-old files go). Undefined when it cannot be built (then bin/spa.mjs runs the sources through tsx, whose error names the problem).
 */
export async function freshCli({ prune = false } = {}) {
  const current = currentBuild();
  if (current) return current;
  try {
    return await buildCli({ prune });
  } catch (error) {
    process.stderr.write(`[spa] could not build the CLI into .setup/cli, running it through tsx: ${error}\n`);
    return undefined;
  }
}
