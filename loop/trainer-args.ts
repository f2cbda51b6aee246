/**
 * The command lines of the trainer modules the loop runs (`spa_trainer.sft`,
 * `spa_trainer.ppo_service`, `spa_trainer.export`), built from the run's LoopConfig and the
 * stage's inputs and outputs. SFT's and PPO's come from schemas/trainer-settings.json, which the
 * trainer writes from its config dataclasses (`python -m spa_trainer.settings_schema`): the loop
 * names each setting by its dataclass field, a name the schema lacks does not compile, and the
 * flag, the module and the checks of each value are the schema's.
 */
import trainerSettings from '../schemas/trainer-settings.json' with { type: 'json' };
import type { LoopConfig } from './configs.js';

/** A trainer module and its arguments: `python -m <module> …args` from trainer/. */
export interface TrainerCommand {
  readonly module: string;
  readonly args: string[];
}

type Commands = (typeof trainerSettings)['$defs'];

/** A trainer command of schemas/trainer-settings.json: `sft` or `ppo` (the PPO service). */
type TrainerCommandName = keyof Commands;

/** The settings of command `C`: the fields of its config dataclass that are flags. */
type SettingName<C extends TrainerCommandName> = keyof Commands[C]['properties'] & string;

/** A setting's value: a list for a setting of several choices (`report_to`). */
type SettingValue = string | number | boolean | readonly string[];

/** Values of command `C`'s settings by field name; a setting left undefined keeps the trainer's default. */
type TrainerSettings<C extends TrainerCommandName> = {
  readonly [K in SettingName<C>]?: SettingValue;
};

/** What the schema says of one setting (the subset of JSON Schema the trainer writes). */
interface SettingSchema {
  readonly type: string | readonly string[];
  readonly 'x-flag': string;
  readonly enum?: readonly (string | null)[];
  /** An array setting's items (their `enum`). */
  readonly items?: { readonly enum: readonly string[] };
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly exclusiveMaximum?: number;
  readonly default?: unknown;
}

interface CommandSchema {
  readonly 'x-module': string;
  readonly properties: Readonly<Record<string, SettingSchema>>;
  readonly required: readonly string[];
}

/**
 * Why `value` is not a valid value of `setting`, or undefined. Hand-written for the five keywords
 * the trainer's schema uses (type, enum, the four bounds) rather than a JSON Schema library, which
 * the project does not depend on.
 */
function settingProblem(setting: SettingSchema, value: SettingValue): string | undefined {
  const types = [setting.type].flat();
  if (typeof value === 'object') {
    const bad = value.filter((item) => !setting.items?.enum.includes(item));
    if (!types.includes('array')) return `must be of type ${types.join(' or ')}, got a list`;
    return value.length === 0 || bad.length > 0
      ? `must be one or more of ${setting.items?.enum.join(', ')}, got ${value.join(' ') || 'none'}`
      : undefined;
  }
  const kind = typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
  if (!types.includes(kind) && !(kind === 'integer' && types.includes('number')))
    return `must be of type ${types.filter((t) => t !== 'null').join(' or ')}, got ${JSON.stringify(value)}`;
  if (setting.enum && !setting.enum.includes(value as string))
    return `must be one of ${setting.enum.filter((v) => v !== null).join(', ')}, got ${String(value)}`;
  if (typeof value !== 'number') return undefined;
  const { minimum: min, maximum: max, exclusiveMinimum: above, exclusiveMaximum: below } = setting;
  const inside =
    (min === undefined || value >= min) &&
    (max === undefined || value <= max) &&
    (above === undefined || value > above) &&
    (below === undefined || value < below);
  const range = `${above ?? min ?? '-∞'} ${above === undefined ? '≤' : '<'} x ${below === undefined ? '≤' : '<'} ${below ?? max ?? '∞'}`;
  return inside ? undefined : `must be a number with ${range}, got ${value}`;
}

/**
 * `python -m <module> …args` for trainer command `command` with `settings`: each setting's flag
 * and value as schemas/trainer-settings.json gives them; a switch is its flag when it differs
 * from the trainer's default (`--no-<flag>` when that default is on). A value the schema refuses,
 * or a required setting left out, throws naming the flag: the trainer would refuse it minutes in.
 */
export function trainerCommand<C extends TrainerCommandName>(
  command: C,
  settings: TrainerSettings<C>,
): TrainerCommand {
  const schema: CommandSchema = trainerSettings.$defs[command];
  const module = schema['x-module'];
  const given = settings as Readonly<Record<string, SettingValue | undefined>>;
  const missing = schema.required.filter((name) => given[name] === undefined);
  if (missing.length > 0) throw new Error(`${module}: no value for ${missing.join(', ')}`);
  const args: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    const setting = schema.properties[name];
    if (value === undefined || setting === undefined) continue;
    const problem = settingProblem(setting, value);
    if (problem) throw new Error(`${module} ${setting['x-flag']} ${problem}`);
    if (typeof value === 'object') args.push(setting['x-flag'], ...value);
    else if (typeof value !== 'boolean') args.push(setting['x-flag'], String(value));
    else if (value !== (setting.default === true))
      args.push(value ? setting['x-flag'] : `--no-${setting['x-flag'].slice(2)}`);
  }
  return { module, args };
}

/** `snake_case` as `camelCase`. */
type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** The LoopConfig field of trainer setting `N`: the stage's prefix and the field (`ppoKeepRatio`), or the field alone (`exportEvery`, shared by stages). */
type LoopFieldOf<P extends string, N extends string> = Extract<
  `${P}${Capitalize<Camel<N>>}` | Camel<N>,
  keyof LoopConfig
>;

/** The settings of `C` that LoopConfig holds under the trainer's own name. */
type LoopNamed<C extends TrainerCommandName, P extends string> = {
  [N in SettingName<C>]: [LoopFieldOf<P, N>] extends [never] ? never : N;
}[SettingName<C>];

/**
 * The values of `names` from `config`, where each has the trainer's name: `<prefix><Field>` or
 * `<field>` in camel case (one name per setting across the trainer's field and flag, LoopConfig,
 * `spa run`'s flag and the config file's key). A name LoopConfig lacks does not compile.
 */
export function fromLoop<C extends TrainerCommandName, P extends string>(
  config: LoopConfig,
  prefix: P,
  names: readonly LoopNamed<C, P>[],
): TrainerSettings<C> {
  const fields = config as unknown as Readonly<Record<string, SettingValue>>;
  const entries = names.map((name) => {
    const camel = name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
    const prefixed = `${prefix}${camel[0]?.toUpperCase() ?? ''}${camel.slice(1)}`;
    return [name, fields[prefixed] ?? fields[camel]] as const;
  });
  return Object.fromEntries(entries) as TrainerSettings<C>;
}

/** One SFT run on a Kafka topic of SFT rows. */
export interface SftRun {
  /** The start model: a tiny model's name, a Hugging Face folder or a trainer run folder. */
  readonly model: string;
  readonly topic: string;
  readonly epochs: number;
  readonly lr: number;
  /** Rows per optimizer step, all in one forward pass; the run's SFT batch sizes when left out. */
  readonly batchSize?: number;
  /** Loss weight of the decision tokens against the state tokens' 1 (docs/spa-sft.md#weights). */
  readonly decisionWeight: number;
  /** The trainer's run folder (checkpoints, metrics.json). */
  readonly out: string;
  readonly brokers: string;
  /** Held-out rows scored for next-state exact match. */
  readonly evalRows: number;
  /** The held-out share of the rows; the trainer's default when left out. */
  readonly valFraction?: number;
  /** The trainer's RNG and row-order seed; the trainer's default when left out. */
  readonly seed?: number;
  /** Export the trained model as the next policy version under `root` and announce it on `topic`. */
  readonly publish?: { readonly root: string; readonly topic: string };
  /** Where the stage's curves go (`--report-to`): its TensorBoard folder and W&B run name. */
  readonly board?: Board;
}

/** A trainer stage's TensorBoard run folder (`--logging-dir`) and W&B run name (`--run-name`). */
export interface Board {
  readonly loggingDir: string;
  readonly runName: string;
}

/** `spa_trainer.sft` on `run`, with the run's batch sizes and window. */
export function sftCommand(config: LoopConfig, run: SftRun): TrainerCommand {
  return trainerCommand('sft', {
    model: run.model,
    input: `kafka:${run.topic}`,
    epochs: run.epochs,
    lr: run.lr,
    decision_weight: run.decisionWeight,
    ...fromLoop<'sft', 'sft'>(config, 'sft', ['batch_size', 'micro_batch_size', 'max_length', 'report_to']),
    ...(run.batchSize !== undefined ? { batch_size: run.batchSize, micro_batch_size: run.batchSize } : {}),
    out: run.out,
    logging_dir: run.board?.loggingDir,
    run_name: run.board?.runName,
    brokers: run.brokers,
    val_fraction: run.valFraction,
    eval_rows: run.evalRows,
    seed: run.seed,
    export: run.publish?.root,
    publish: run.publish?.topic,
  });
}

/** The PPO service's inputs and outputs. */
export interface PpoRun {
  readonly model: string;
  /** The run's topics: rollouts in, policy updates out, rejects to its own DLQ. */
  readonly topics: { readonly rollouts: string; readonly policy: string; readonly dlq: string };
  readonly out: string;
  /** Where each exported policy version goes. */
  readonly exportRoot: string;
  readonly brokers: string;
  readonly board?: Board;
}

/** `spa_trainer.ppo_service` with the run's PPO settings on its rollouts topic. */
export function ppoServiceCommand(config: LoopConfig, run: PpoRun): TrainerCommand {
  // The generator's window: PPO scores each turn on the prompt it was sampled from (docs/spa-ppo.md#window).
  const window = config.contextWindow > 0;
  return trainerCommand('ppo', {
    model: run.model,
    input: `kafka:${run.topics.rollouts}`,
    out: run.out,
    export_root: run.exportRoot,
    publish: run.topics.policy,
    ...fromLoop<'ppo', 'ppo'>(config, 'ppo', [
      ...['steps', 'groups_per_step', 'group_size', 'keep_ratio', 'export_every', 'max_staleness'],
      ...['mask', 'loss_agg', 'kl_loss_coef', 'actor_lr', 'critic_lr', 'epochs'],
      ...['micro_batch_size', 'mini_batch_size', 'report_to'],
    ] as const),
    logging_dir: run.board?.loggingDir,
    run_name: run.board?.runName,
    // LoopConfig's one choice of gae | grpo | grpo-mean is the trainer's two settings.
    adv_estimator: config.ppoAdvEstimator === 'gae' ? 'gae' : 'grpo',
    grpo_std_norm: config.ppoAdvEstimator !== 'grpo-mean',
    context_window: window ? config.contextWindow : undefined,
    max_new_tokens: window ? config.maxNewTokens : undefined,
    dlq: `kafka:${run.topics.dlq}`, // the run's own topic: spa.dlq may not exist on this broker
    brokers: run.brokers,
  });
}

/** One export of a model as an ONNX policy version. */
export interface ExportRun {
  readonly model: string;
  /** The run's policies folder; the version goes to `<root>/v<version, 6 digits>`. */
  readonly root: string;
  readonly version: number;
  /** Announce the version on this policy topic. */
  readonly publish?: { readonly topic: string; readonly brokers: string };
}

/** `spa_trainer.export` of an `init` policy named after the run's model. */
export function exportCommand(config: LoopConfig, run: ExportRun): TrainerCommand {
  const args = [
    ...['--model', run.model, '--out', run.root, '--stage', 'init', '--version', String(run.version)],
    ...['--name', config.model],
    ...(run.publish ? ['--publish', run.publish.topic, '--brokers', run.publish.brokers] : []),
  ];
  return { module: 'spa_trainer.export', args };
}
