/**
 * Repeats every failure in the last lines of a run: the failing test's file and name and the
 * first lines of its error, after the default reporter's summary, so a CI log's tail names them.
 * Vitest's own reporters print failures above the summary, where a truncated log loses them.
 */
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

interface Failure {
  readonly where: string;
  readonly error: string;
}

function firstLines(text: string, lines = 3): string {
  return text.split('\n').slice(0, lines).join('\n    ');
}

function failuresOf(modules: ReadonlyArray<TestModule>): Failure[] {
  const failures: Failure[] = [];
  for (const module of modules) {
    const file = relative(process.cwd(), module.moduleId);
    for (const error of module.errors())
      failures.push({ where: `${file} (file)`, error: firstLines(error.message ?? String(error)) });
    for (const test of module.children.allTests('failed')) {
      const result = test.result();
      const message = result.state === 'failed' ? (result.errors[0]?.message ?? '') : '';
      failures.push({ where: `${file} > ${test.fullName}`, error: firstLines(message) });
    }
  }
  return failures;
}

export default class FailuresLastReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<{ message?: string }>): void {
    const failures = failuresOf(modules);
    for (const error of unhandled)
      failures.push({ where: '(unhandled error)', error: firstLines(error.message ?? '') });
    if (failures.length === 0) return;
    const lines = [`\nFAILED (${failures.length}):`];
    for (const f of failures) lines.push(`  ✗ ${f.where}\n    ${f.error}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
