/** `npm run bench -- <suite>`: each suite lives in bench/<suite>.ts and exports `run()`. */
const suites: Record<string, () => Promise<{ run(args: string[]): Promise<void> }>> = {
  envs: () => import('./envs.js'),
  'envs-sokoban': () => import('./envs-sokoban.js'),
  kafka: () => import('./kafka.js'),
  pipeline: () => import('./pipeline.js'),
  generate: () => import('./generate.js'),
  trainer: () => import('./trainer.js'),
  'trainer-share': () => import('./trainer-share.js'),
  telemetry: () => import('./telemetry.js'),
  freshness: () => import('./freshness.js'),
  memory: () => import('./memory.js'),
};

export async function main(args: string[]): Promise<void> {
  const [name, ...rest] = args;
  const load = name ? suites[name] : undefined;
  if (!load) {
    console.error(
      `usage: npm run bench -- <suite>   (suites: ${Object.keys(suites).join(', ') || 'none yet'})`,
    );
    process.exitCode = 2;
    return;
  }
  await (await load()).run(rest);
}
