/**
 * Issue 44 item 4: `spa run --help` names the broker settings; they were only in
 * infra/kafka/README.md, so a newcomer beside another checkout's broker had no way to find them.
 */
import { describe, expect, it } from 'vitest';
import { runSpa } from '../cli/spa-process.js';

describe('spa run --help', () => {
  it('names KAFKA_BROKERS, KAFKA_PORT and KAFKA_INSTANCE', async () => {
    const result = await runSpa(['run', '--help'], ['127.0.0.1:1']);
    expect(result.code).toBe(0);
    for (const setting of ['KAFKA_BROKERS=host:port', 'KAFKA_PORT=9092', 'KAFKA_INSTANCE=default'])
      expect(result.stdout).toContain(setting);
    expect(result.stdout).toContain('infra/kafka/data/<name>');
  }, 180_000);
});
