#!/usr/bin/env node
// Entry point for `npm run bench -- <suite>`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../bench/main.ts');
await main(process.argv.slice(2));
