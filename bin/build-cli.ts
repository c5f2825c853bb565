#!/usr/bin/env node
import { relative } from 'node:path';
import { bundleCli } from '../tools/cli-bundle/bundle.ts';

/** `npm run build:cli`: the bundled `mesh` in dist/cli/ (tools/cli-bundle/bundle.ts); exit 1 when it cannot be built. */
bundleCli().then(
  ({ entry }) => process.stdout.write(`built ${relative(process.cwd(), entry)}\n`),
  (error: unknown) => {
    process.stderr.write(`build:cli: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);
