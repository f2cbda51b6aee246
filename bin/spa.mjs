#!/usr/bin/env node
// Entry point for `npx spa …`: runs the CLI built into .setup/cli (rebuilt first when a source
// changed since, scripts/cli-build.mjs), or the TypeScript sources through tsx when it cannot be built.
import { freshCli } from '../scripts/cli-build.mjs';

const built = await freshCli();
let main;
if (built) ({ main } = await import(built));
else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
await main(process.argv);
