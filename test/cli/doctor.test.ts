import { describe, expect, it } from 'vitest';
import { formatDoctor } from '../../cli/commands/doctor.js';

describe('spa doctor report', () => {
  it('prints one aligned line per check with the fix under anything not OK', () => {
    const text = formatDoctor([
      { name: 'java', status: 'ok', detail: 'Java 17.0.15' },
      { name: 'kafka jars', status: 'fail', detail: 'not provisioned', fix: 'node scripts/setup.mjs kafka' },
    ]);
    expect(text.split('\n')).toEqual([
      'OK   java        Java 17.0.15',
      'FAIL kafka jars  not provisioned',
      '                 → node scripts/setup.mjs kafka',
    ]);
  });
});
