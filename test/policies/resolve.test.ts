/**
 * `--policy` values: the local ones (policies/resolve.ts) and `latest` (streams/policies/resolve.ts),
 * and the one-line errors a wrong value gets.
 */
import { describe, expect, it } from 'vitest';
import { resolveLocalPolicy } from '../../policies/resolve.js';
import { POLICY_SPEC_HELP, resolvePolicy } from '../../streams/policies/resolve.js';

const options = { mode: 'wm' } as const;

describe('--policy', () => {
  it('a built-in resolves without Kafka; latest is not local', async () => {
    const random = await resolveLocalPolicy('random', options);
    expect(random?.describe).toBe('random');
    expect(await resolveLocalPolicy('latest', options)).toBeUndefined();
  });

  it('names what is wrong with a value', async () => {
    await expect(resolvePolicy('onnx:', options)).rejects.toThrow(
      '--policy onnx:<folder> needs an artifact folder',
    );
    await expect(resolvePolicy('latest', options)).rejects.toThrow('--policy latest needs Kafka');
    await expect(resolvePolicy('greedy', options)).rejects.toThrow(
      `unknown --policy "greedy": expected ${POLICY_SPEC_HELP}`,
    );
    expect(POLICY_SPEC_HELP).toBe('random | oracle | onnx:<artifact folder> | latest (follows spa.policy)');
  });
});
