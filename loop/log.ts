/** A line of the loop's own log on stderr, beside the trainers' and generators' prefixed lines. */
export const log = (line: string): void => {
  process.stderr.write(`[spa run] ${line}\n`);
};
