/**
 * Import rules of the TypeScript layers (README.md#architecture), checked by `npm run lint:deps`.
 *
 *   envs ◄─ schemas ◄─┬─ operators ◄─┬─ streams ◄─ cli        (bench, scripts, test: anything)
 *                     └─ infra ◄─────┘
 *
 * Inside streams/ the subfolders are ordered too (each may import only those before it):
 * telemetry, kafka, policies, episodes, eval, files, web. Type-only imports count.
 */

/** streams/ subfolders, lowest first. */
const streamsOrder = ['telemetry', 'kafka', 'policies', 'episodes', 'eval', 'files', 'web'];

/** The generator's compositions at the root of streams/; nothing inside a subfolder imports them. */
const streamsCompositions = ['generator-pipeline', 'generate-to-kafka'];

/** A rule forbidding imports from `from` into any of the `to` folders. */
function forbid(name, comment, from, to) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: `^(${to.join('|')})/` } };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules import each other in one direction only.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    forbid('envs-at-the-bottom', 'envs/ imports nothing of the project.', '^envs/', [
      'schemas',
      'operators',
      'streams',
      'infra',
      'cli',
      'bench',
      'scripts',
      'test',
    ]),
    forbid('schemas-only-envs', 'schemas/ may import envs/ only.', '^schemas/', [
      'operators',
      'streams',
      'infra',
      'cli',
      'bench',
      'scripts',
      'test',
    ]),
    forbid('operators-only-envs-schemas', 'operators/ may import envs/ and schemas/ only.', '^operators/', [
      'streams',
      'infra',
      'cli',
      'bench',
      'scripts',
      'test',
    ]),
    forbid(
      'infra-not-streams',
      'infra/ runs processes (broker, topic admin) and never imports the pipeline.',
      '^infra/',
      ['streams'],
    ),
    forbid('infra-only-envs-schemas', 'infra/ may import envs/ and schemas/ only.', '^infra/', [
      'operators',
      'cli',
      'bench',
      'scripts',
      'test',
    ]),
    forbid('streams-not-cli', 'streams/ is composed by cli/, never the other way.', '^streams/', [
      'cli',
      'bench',
      'scripts',
      'test',
    ]),
    forbid('cli-not-tools', 'cli/ does not import bench/, scripts/ or test/.', '^cli/', [
      'bench',
      'scripts',
      'test',
    ]),
    ...streamsOrder.slice(0, -1).map((folder, i) =>
      forbid(
        `streams-${folder}-below-${streamsOrder.slice(i + 1).join('-')}`,
        `streams/${folder}/ may not import the streams/ subfolders above it.`,
        `^streams/${folder}/`,
        streamsOrder.slice(i + 1).map((above) => `streams/${above}`),
      ),
    ),
    {
      name: 'streams-subfolders-not-compositions',
      comment: "streams/ subfolders do not import the generator's compositions at the root of streams/.",
      severity: 'error',
      from: { path: '^streams/[^/]+/' },
      to: { path: `^streams/(${streamsCompositions.join('|')})\\.ts$` },
    },
  ],
  options: {
    includeOnly: '^(envs|schemas|operators|streams|infra|cli|bench|scripts|test)/',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
