/**
 * Each `spa` command's one-line description, for its own `--help` and for the top-level list,
 * which cli/main.ts prints without loading any command's module.
 */
export const COMMAND_SUMMARIES = {
  run: 'run the SPA loop end to end: generate → SFT → export → self-play + PPO with live policy swaps → Pass@k',
  env: 'step, show or play an environment',
  parse:
    'parse model continuations like SPA: stdin JSON Lines {"mode":"wm"|"base","env":"sokoban"|"frozenlake"|"sudoku",' +
    '"continuation":"…","spa_fallback_bug"?:bool} → {"matched","ok","actions","valid_ids","penalty","canonical","reason"}',
  generate:
    'play episodes with a generator policy and write SFT rows (or PPO rollouts) as JSON Lines or to Kafka; --shard i/n plays one of n shards',
  eval: "Pass@1 / Pass@k of a policy on SPA's validation puzzles (seeds 123..250)",
  export:
    "write SFT rows (a JSON Lines file, or a run's SFT topic: --run) as SPA's released dataset columns (JSON Lines or Parquet), or as verl or TRL Parquet; optionally split",
  replay: 're-run stored trajectories (spa.trajectories) through the operators into another topic',
  tap: 'print records of a topic readably (ephemeral consumer, commits nothing)',
  topics: 'list topics with partitions and record counts, and consumer groups with their lag',
  board: "show a run's curves in TensorBoard (SFT, PPO, evaluations) on 127.0.0.1, printing its address",
  doctor:
    'check Java, Maven, the Kafka jars, the broker, the trainer venv, onnxruntime-node and Chromium; say what to do (--gpu: the CUDA path, docs/gpu.md)',
} as const;

/** A `spa` command's name. */
export type CommandName = keyof typeof COMMAND_SUMMARIES;
