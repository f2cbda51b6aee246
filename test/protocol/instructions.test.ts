import { describe, expect, it } from 'vitest';
import { SPA_ENV_PROMPT_SPECS } from '../../envs/protocol/action-vocabularies.js';
import {
  SPA_MAX_ACTIONS_PER_TRAJ,
  instructionPrefix,
  instructionText,
} from '../../envs/protocol/instructions.js';
import type { EnvPromptSpec } from '../../envs/protocol/types.js';

const { sokoban, frozenlake, sudoku } = SPA_ENV_PROMPT_SPECS;

describe('instructionText (docs/spa-prompts.md#prefix, SPA config/envs.yaml)', () => {
  it('keeps SPA typos, en dashes and real newlines in the Sokoban world-model text', () => {
    const text = instructionText('sokoban', 'wm');
    expect(text).toContain('push all boxes to targets You are provided');
    expect(text).toContain(
      '1 Down \u2013 I push box to (4,2). 2 Left \u2013 I step to (3,1). 3 Down \u2013 I stand',
    );
    expect(text).toContain(
      '<observation>######\n#_####\n#_P###\n#_X#_#\n#__O_#\n######\nPlayer (P) is at (2,2);',
    );
    expect(text).toContain('bottom-right corner (5, 5).');
    expect(text.endsWith('</think> <answer> Down || Left || Down </answer>')).toBe(true);
    expect(text).not.toContain('\\n');
  });

  it('keeps the FrozenLake quirks ("Forbid the whole", ASCII hyphens, √ in the sample)', () => {
    expect(instructionText('frozenlake', 'base')).toContain('Forbid the whole and go to the target.');
    const wm = instructionText('frozenlake', 'wm');
    expect(wm).toContain('1 Up - move to safe ice (2,2).');
    expect(wm).toContain('<prediction>_O__\nO___\n\u221a___\n____</prediction>');
    expect(wm).toContain('bottom-right corner (3, 3).');
  });

  it('keeps the Sudoku en dash, arrow and word limits per mode', () => {
    expect(instructionText('sudoku', 'wm')).toContain('digits 1\u20134.');
    expect(instructionText('sudoku', 'wm')).toContain(
      'Keep the response under 100 words. An example output:',
    );
    expect(instructionText('sudoku', 'wm')).toContain(
      '| . 1 4 2\n Empty positions to be filled are at (4,1)',
    );
    expect(instructionText('sudoku', 'base')).toContain('Keep the response under 50 words. Example:');
    expect(instructionText('sudoku', 'base')).toContain('one empty cell \u2192 place 1.');
  });

  it('substitutes the bottom-right corner for other grid sizes only', () => {
    const spa = instructionText('sokoban', 'wm');
    const big = instructionText('sokoban', 'wm', { rows: 8, cols: 10 });
    expect(big).toBe(spa.replace('corner (5, 5)', 'corner (7, 9)'));
    expect(instructionText('frozenlake', 'wm', { rows: 6, cols: 6 })).toContain('corner (5, 5).');
    expect(() => instructionText('sokoban', 'wm', { rows: 0, cols: 6 })).toThrow(/gridSize/);
  });
});

describe('instructionPrefix', () => {
  it("is 1204 characters for SPA's Sokoban world-model prefix (docs/spa-testvectors.md#sokoban-episode)", () => {
    expect(instructionPrefix(sokoban, 'wm', SPA_MAX_ACTIONS_PER_TRAJ.sokoban)).toHaveLength(1204);
  });

  it('appends the legend, the actions and the budget line with " || "', () => {
    const prefix = instructionPrefix(sokoban, 'base', 10);
    expect(prefix).toBe(
      instructionText('sokoban', 'base') +
        '\nThe meaning of each symbol in the state is:\n' +
        '#: wall, _: empty, O: target, \u221a: box on target, X: box, P: player, S: player on target' +
        '\nYour available actions are:\nUp, Down, Left, Right' +
        '\nYou can make up to 10 actions, separated by the action separator " || "\n',
    );
    expect(instructionPrefix(frozenlake, 'wm', 10)).toContain(
      '\nThe meaning of each symbol in the state is:\nP: player, _: empty, O: hole, G: goal, X: player in hole, \u221a: player on goal\nYour available actions are:\nLeft, Down, Right, Up\n',
    );
  });

  it('is the bare instruction for Sudoku (no legend, no action table)', () => {
    expect(instructionPrefix(sudoku, 'wm', 50)).toBe(instructionText('sudoku', 'wm'));
  });

  it('treats an empty legend or action table as absent (Python truthiness)', () => {
    const bare: EnvPromptSpec = { ...sokoban, gridVocabulary: '', actionNames: [] };
    expect(instructionPrefix(bare, 'base', 10)).toBe(instructionText('sokoban', 'base'));
    expect(() => instructionPrefix(sokoban, 'base', 0)).toThrow(/maxActionsPerTraj 0/);
  });
});
