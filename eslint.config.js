import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Size limits of production code (everything but test/); blank lines and comments do not count. */
const sizeLimits = { skipBlankLines: true, skipComments: true };
const maxFileLines = 500;
const maxFunctionLines = 80;

/**
 * Production files whose longest function was over {@link maxFunctionLines} when the limit came
 * (issue 34), each capped at its length then. This list must only shrink: split the function,
 * lower or delete its entry. No file is over {@link maxFileLines}, so that limit has no list.
 */
const longFunctionsToday = {
  'bench/memory.ts': 83,
  'cli/commands/eval.ts': 124,
  'cli/commands/generate.ts': 119,
  'cli/commands/replay.ts': 90,
  'cli/commands/tap.ts': 82,
  'infra/kafka/client/kafkajs-admin.ts': 81,
  'infra/kafka/client/kafkajs-sink.ts': 89,
  'scripts/ppo-check.ts': 83,
  'streams/kafka/consume-spa.ts': 90,
  'streams/telemetry/metrics.ts': 94,
};

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'trainer/**',
      'runs/**',
      'infra/kafka/dist/**',
      'infra/kafka/data/**',
      '.setup/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  {
    ignores: ['test/**'],
    rules: {
      'max-lines': ['error', { ...sizeLimits, max: maxFileLines }],
      'max-lines-per-function': ['error', { ...sizeLimits, max: maxFunctionLines }],
    },
  },
  ...Object.entries(longFunctionsToday).map(([file, max]) => ({
    files: [file],
    rules: { 'max-lines-per-function': ['error', { ...sizeLimits, max }] },
  })),
  {
    files: ['**/*.mjs', 'bin/**'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } },
  },
);
