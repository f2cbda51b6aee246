import { lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { annotateGroundTruth, fillStateTags, replaceStates } from '../../operators/annotate-ground-truth.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import { step } from './fixtures.js';

describe('replaceStates (docs/spa-testvectors.md#ground-truth)', () => {
  it.each([
    [
      '<think> <observation>A</observation> t <prediction>B</prediction></think><answer>Up</answer>',
      '<think> <observation>S0</observation> t <prediction>S1</prediction></think><answer>Up</answer>',
    ],
    ['<think>no tags</think><answer>Up</answer>', '<think>no tags</think><answer>Up</answer>'],
    [
      '<think><observation>A</observation><observation>B</observation></think><answer>Up</answer>',
      '<think><observation>S0</observation><observation>S0</observation></think><answer>Up</answer>',
    ],
    [
      '<think><prediction>\nB\n</prediction></think><answer>Up</answer>',
      '<think><prediction>S1</prediction></think><answer>Up</answer>',
    ],
  ])('%j', (message, expected) => {
    expect(replaceStates(message, 'S0', 'S1')).toBe(expected);
  });

  it('treats states literally (Python template misparse, JS $-patterns)', () => {
    expect(replaceStates('<observation>A</observation>', '3 | . 1', 'x')).toBe(
      '<observation>3 | . 1</observation>',
    );
    expect(replaceStates('<observation>A</observation>', "$1 $& $'", 'x')).toBe(
      "<observation>$1 $& $'</observation>",
    );
  });
});

describe('fillStateTags (docs/spa-data.md#fill)', () => {
  it.each([
    [
      '<think>Shortest plan: Down.</think><answer>Down</answer>',
      '<think><observation></observation>Shortest plan: Down.<prediction></prediction></think><answer>Down</answer>',
    ],
    [
      '<think><observation>A</observation> t</think><answer>Up</answer>',
      '<think><observation>A</observation> t<prediction></prediction></think><answer>Up</answer>',
    ],
    [
      '<think>t <prediction>B</prediction></think><answer>Up</answer>',
      '<think><observation></observation>t <prediction>B</prediction></think><answer>Up</answer>',
    ],
    [
      '<think><observation>A</observation><prediction>B</prediction></think><answer>Up</answer>',
      '<think><observation>A</observation><prediction>B</prediction></think><answer>Up</answer>',
    ],
    ['<answer>Up</answer>', '<answer>Up</answer>'],
    ['<think>open only<answer>Up</answer>', '<think>open only<answer>Up</answer>'],
  ])('%j', (message, expected) => {
    expect(fillStateTags(message)).toBe(expected);
  });
});

describe('annotateGroundTruth', () => {
  const trajectory = () =>
    lastValueFrom(of(step('g/m0', 1, false), step('g/m0', 2, true)).pipe(toTrajectory(() => 0)));

  it('gt: observation of turn t = state before turn t, prediction = state after turn t', async () => {
    const annotated = await lastValueFrom(of(await trajectory()).pipe(annotateGroundTruth()));
    const assistants = annotated.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(assistants).toEqual([
      '<think> <observation>S0</observation> t <prediction>S1</prediction></think><answer>Up</answer>',
      '<think> <observation>S1</observation> t <prediction>S2</prediction></think><answer>Up</answer>',
    ]);
    expect(annotated.annotation).toBe('gt');
  });

  it('gt-fill gives a turn without tags the true states; gt leaves it as it is', async () => {
    const bare = '<think>Shortest plan: Up.</think><answer>Up</answer>';
    const t = await lastValueFrom(
      of(step('g/m0', 1, false, { llmResponse: bare }), step('g/m0', 2, true)).pipe(toTrajectory(() => 0)),
    );
    const assistants = (annotation: 'gt' | 'gt-fill') =>
      lastValueFrom(of(t).pipe(annotateGroundTruth({ annotation }))).then((a) =>
        a.messages.filter((m) => m.role === 'assistant').map((m) => m.content),
      );
    expect(await assistants('gt-fill')).toEqual([
      '<think><observation>S0</observation>Shortest plan: Up.<prediction>S1</prediction></think><answer>Up</answer>',
      '<think> <observation>S1</observation> t <prediction>S2</prediction></think><answer>Up</answer>',
    ]);
    expect((await assistants('gt'))[0]).toBe(bare);
  });

  it('self-belief keeps the model text', async () => {
    const annotated = await lastValueFrom(
      of(await trajectory()).pipe(annotateGroundTruth({ annotation: 'self-belief' })),
    );
    expect(annotated.messages.filter((m) => m.role === 'assistant')[0]!.content).toContain(
      '<observation>guess1</observation>',
    );
  });

  it('random-coords keeps the grid and replaces coordinate pairs deterministically', async () => {
    const t = await trajectory();
    const state =
      '######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).';
    const withStates = { ...t, states: [state, state, state] };
    const run = () =>
      lastValueFrom(of(withStates).pipe(annotateGroundTruth({ annotation: 'random-coords' })));
    const [a, b] = [await run(), await run()];
    const obs = /<observation>(.*?)<\/observation>/s.exec(
      a.messages.find((m) => m.role === 'assistant')!.content,
    )![1]!;
    expect(obs.startsWith('######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (')).toBe(true);
    expect(obs).toMatch(/^[^]*\(\d,\d\); box \(X\) is at \(\d,\d\); target \(O\) is at \(\d,\d\)\.$/);
    expect(a.messages).toEqual(b.messages);
  });
});
