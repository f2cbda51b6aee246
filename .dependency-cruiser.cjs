/**
 * Import rules of the TypeScript layers (docs/architecture.md#imports), checked by `npm run lint:deps`.
 *
 *                     ┌─ policies ◄──┐            ┌─ web ◄──┐
 *   envs ◄─ schemas ◄─┼─ operators ◄─┼─ streams ◄─┤         ├─ cli   (bench, scripts, test: anything)
 *                     └─ infra ◄─────┘            └─ loop ◄─┘
 *                       (kafka/client/: the one Kafka client)
 *
 * `a ◄─ b`: b may import a; `layers` below is the exact table (cli imports policies/ too; loop,
 * web and cli import infra/ too). The LLM runtime's libraries stay in policies/onnx/ (rule
 * onnx-libraries-stay-in-policies-onnx), and the Kafka client in infra/kafka/client/ (rule
 * kafka-client-stays-in-infra-kafka-client): the rest reaches Kafka through its two ports there,
 * transport.ts and admin.ts.
 *
 * Inside streams/ the subfolders are ordered too (each may import only those before it):
 * telemetry, kafka, policies, episodes, eval, files. Type-only imports count.
 */

/** What each layer may import besides itself; bench/, scripts/ and test/ may import anything. */
const layers = {
  envs: [],
  schemas: ['envs'],
  policies: ['envs', 'schemas'],
  operators: ['envs', 'schemas'],
  infra: ['envs', 'schemas'],
  streams: ['envs', 'schemas', 'policies', 'operators', 'infra'],
  web: ['envs', 'schemas', 'policies', 'operators', 'infra', 'streams'],
  loop: ['envs', 'schemas', 'operators', 'infra', 'streams', 'policies'],
  cli: ['envs', 'schemas', 'policies', 'operators', 'infra', 'streams', 'web', 'loop'],
};
const folders = [...Object.keys(layers), 'bench', 'scripts', 'test'];

/** streams/ subfolders, lowest first. */
const streamsOrder = ['telemetry', 'kafka', 'policies', 'episodes', 'eval', 'files'];

/** The generator's compositions at the root of streams/; nothing inside a subfolder imports them. */
const streamsCompositions = ['generator-pipeline', 'generator-sinks'];

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
    forbid(
      'infra-not-streams',
      'infra/ runs processes (broker, topic admin) and never imports the pipeline.',
      '^infra/',
      ['streams'],
    ),
    // infra-not-streams reports infra -> streams; the layer rule names the rest.
    ...Object.entries(layers).map(([layer, allowed]) =>
      forbid(
        allowed.length === 0
          ? `${layer}-imports-no-other-folder`
          : `${layer}-imports-only-${allowed.join('-')}`,
        `${layer}/ may import ${allowed.length === 0 ? 'nothing of the project' : allowed.join('/, ') + '/'} (and npm packages).`,
        `^${layer}/`,
        folders.filter((f) => f !== layer && !allowed.includes(f) && !(layer === 'infra' && f === 'streams')),
      ),
    ),
    ...streamsOrder.slice(0, -1).map((folder, i) =>
      forbid(
        `streams-${folder}-below-${streamsOrder.slice(i + 1).join('-')}`,
        `streams/${folder}/ may not import the streams/ subfolders above it.`,
        `^streams/${folder}/`,
        streamsOrder.slice(i + 1).map((above) => `streams/${above}`),
      ),
    ),
    {
      name: 'envs-internal-stays-in-envs',
      comment:
        'envs/internal/ holds what only the envs use; code outside envs/ (tests included) imports the public files (envs/rng.ts, envs/registry.ts, envs/protocol/index.ts, …).',
      severity: 'error',
      from: { pathNot: '^envs/' },
      to: { path: '^envs/internal/' },
    },
    {
      name: 'streams-subfolders-not-compositions',
      comment: "streams/ subfolders do not import the generator's compositions at the root of streams/.",
      severity: 'error',
      from: { path: '^streams/[^/]+/' },
      to: { path: `^streams/(${streamsCompositions.join('|')})\\.ts$` },
    },
    {
      name: 'kafka-client-stays-in-infra-kafka-client',
      comment:
        'kafkajs is imported only in infra/kafka/client/ (its adapters behind the transport and admin ports); test/ may drive it directly (cutting sockets, raw admin calls).',
      severity: 'error',
      from: { pathNot: '^(infra/kafka/client|test)/' },
      to: { path: '^node_modules/kafkajs/' },
    },
    {
      name: 'onnx-libraries-stay-in-policies-onnx',
      comment:
        'onnxruntime-node, protobufjs and @huggingface/tokenizers (the LLM runtime) are imported only in policies/onnx/; bench/ and test/ may measure and check it directly.',
      severity: 'error',
      from: { pathNot: '^(policies/onnx|bench|test)/' },
      to: { path: '^node_modules/(onnxruntime-node|protobufjs|@huggingface/tokenizers)/' },
    },
  ],
  options: {
    // node_modules: as leaves (doNotFollow), for the rules that keep a library in its folder.
    includeOnly:
      '^(envs|schemas|policies|operators|streams|infra|web|node_modules|loop|cli|bench|scripts|test)/',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
