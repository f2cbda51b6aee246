/**
 * `spa export --format verl | trl` rows (streams/files/trainer-datasets.ts) and the reader of SPA's
 * Python-repr columns behind them (streams/files/python-literal.ts). The files themselves are
 * loaded with Hugging Face `datasets` in test/cli/export.slow.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SPA_REWARD_MODEL } from '../../operators/to-sft-rows.js';
import type { SftRow } from '../../schemas/index.js';
import { parsePythonLiteral } from '../../streams/files/python-literal.js';
import { SPA_PARQUET_SCHEMA } from '../../streams/files/spa-dataset-parquet.js';
import {
  toTrlRow,
  toVerlRow,
  TRL_PARQUET_SCHEMA,
  VERL_PARQUET_SCHEMA,
} from '../../streams/files/trainer-datasets.js';

const row: SftRow = {
  data_source: 'sokoban',
  prompt: [
    { role: 'system', content: "You're a helpful assistant. " },
    { role: 'user', content: 'Turn 1:\nState:\n#P_O#\n' },
  ],
  response:
    '<think> <observation>#P_O#</observation> <prediction>#_PO#</prediction> </think> <answer>Right</answer>',
  ability: 'bfs',
  reward_model: SPA_REWARD_MODEL,
  extra_info: "{'index': 100016, 'split': 'train'}",
  trajectory_id: 'run/g0/s1',
  turn: 0,
  env: 'sokoban',
  policy_version: 3,
  annotation: 'gt',
  mask_transitions: false,
};

describe('parsePythonLiteral', () => {
  it("reads SPA's reward_model and extra_info reprs, integers as bigint", () => {
    expect(parsePythonLiteral(SPA_REWARD_MODEL)).toEqual({
      ground_truth: { numbers: [0n, 0n], target: 0n },
      style: 'rule',
    });
    expect(parsePythonLiteral("{'index': 100016, 'split': 'train'}")).toEqual({
      index: 100016n,
      split: 'train',
    });
  });

  it('reads the rest of the literal syntax those columns may use, JSON included', () => {
    expect(
      parsePythonLiteral(`{"a": [1.5, -2, 1e3], 'b': (True, False, None), 'c': "it's \\\\n", }`),
    ).toEqual({
      a: [1.5, -2n, 1000],
      b: [true, false, null],
      c: "it's \\n",
    });
    expect(parsePythonLiteral(`'line\\nnext \\'q\\''`)).toBe("line\nnext 'q'");
    expect(parsePythonLiteral('{"x": null, "y": true}')).toEqual({ x: null, y: true });
    expect(parsePythonLiteral('9223372036854775807')).toBe(9223372036854775807n);
  });

  it('throws naming what it expected and where', () => {
    expect(() => parsePythonLiteral("{'a' 1}")).toThrow(/expected ":" at character 5/);
    expect(() => parsePythonLiteral("{'a': 1} x")).toThrow(/expected the end at character 9/);
    expect(() => parsePythonLiteral("{'a': set()}")).toThrow(/expected a value at character 6/);
    expect(() => parsePythonLiteral("'open")).toThrow(/expected closing '/);
    expect(() => parsePythonLiteral('[1 2]')).toThrow(/expected "," or "]"/);
  });
});

describe('verl rows', () => {
  it("keep SPA's columns, with reward_model and extra_info as dicts instead of repr strings", () => {
    expect(toVerlRow(row)).toEqual({
      data_source: 'sokoban',
      prompt: row.prompt.map((m) => ({ content: m.content, role: m.role })),
      response: row.response,
      ability: 'bfs',
      reward_model: { ground_truth: { numbers: [0n, 0n], target: 0n }, style: 'rule' },
      extra_info: { index: 100016n, split: 'train' },
    });
  });

  it('refuse a reward_model or extra_info of another shape, naming the field', () => {
    expect(() => toVerlRow({ ...row, extra_info: "{'index': 'x', 'split': 'train'}" })).toThrow(
      /extra_info.index must be an integer, got x/,
    );
    expect(() => toVerlRow({ ...row, extra_info: '[1]' })).toThrow(/extra_info "\[1\]" is not a dict/);
    expect(() => toVerlRow({ ...row, reward_model: "{'style': 'rule'}" })).toThrow(
      /reward_model.ground_truth must be a dict/,
    );
    expect(() => toVerlRow({ ...row, reward_model: 'oops' })).toThrow(
      /reward_model is not a Python\/JSON literal/,
    );
  });

  it('are written with struct columns after the same four leading columns as SPA', () => {
    const names = (schema: typeof VERL_PARQUET_SCHEMA) => schema.map((element) => element.name);
    expect(names(VERL_PARQUET_SCHEMA).slice(0, 9)).toEqual(names(SPA_PARQUET_SCHEMA).slice(0, 9));
    expect(names(VERL_PARQUET_SCHEMA).slice(9)).toEqual([
      'reward_model',
      'ground_truth',
      'numbers',
      'list',
      'element',
      'target',
      'style',
      'extra_info',
      'index',
      'split',
    ]);
  });
});

describe('TRL rows', () => {
  it("are TRL's conversational prompt-completion pair: role/content messages, the response as the assistant's", () => {
    const trl = toTrlRow(row);
    expect(trl).toEqual({
      prompt: row.prompt.map((m) => ({ role: m.role, content: m.content })),
      completion: [{ role: 'assistant', content: row.response }],
    });
    expect(Object.keys(trl.prompt[0]!)).toEqual(['role', 'content']);
    expect(TRL_PARQUET_SCHEMA[0]).toEqual({ name: 'schema', num_children: 2 });
  });
});
