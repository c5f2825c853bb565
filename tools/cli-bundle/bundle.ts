import { cp, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { consoleAssetsDir } from '../../lib/clients/cli/console/pages.ts';
import { buildInfoHere } from '../packaging/executable.ts';
import { projectRoot } from '../packaging/targets.ts';

/** Where `npm run build:cli` (and `npm install`, through `prepare`) writes the bundled `mesh`. */
export const cliBundleDir = join(projectRoot, 'dist', 'cli');

/**
 * `mesh` as a few ES modules instead of some 300 TypeScript files: Node strips no types and
 * resolves no module paths at each call, and a command still loads only the modules it names
 * (each `import()` of lib/clients/cli/commands/program.ts is a chunk of its own), so a call
 * costs about a third of the CPU it does from source. The console's files are copied beside
 * the chunk that reads them (its `import.meta.dirname`). bin/mesh.ts keeps running from source.
 */
export async function bundleCli(outDir = cliBundleDir): Promise<{ readonly entry: string }> {
  const staging = `${outDir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const result = await build({
    entryPoints: { mesh: join(projectRoot, 'bin', 'mesh.ts') },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    minifyWhitespace: true,
    legalComments: 'none',
    // `mesh --version` from the bundle: the version and commit it was built from (lib/clients/common/build-info.ts)
    define: { MESH_BUILD: JSON.stringify(await buildInfoHere()) },
    logLevel: 'silent',
    // CommonJS dependencies bundled into ES modules still call require for Node's own modules
    banner: {
      js: "import { createRequire as meshRequire } from 'node:module'; const require = meshRequire(import.meta.url);",
    },
  });
  if (result.warnings.length > 0)
    throw new Error(
      `bundling bin/mesh.ts warned: ${result.warnings.map((warning) => warning.text).join('; ')}`,
    );
  await cp(consoleAssetsDir, join(staging, 'assets'), { recursive: true });
  await rm(outDir, { recursive: true, force: true });
  await rename(staging, outDir);
  return { entry: join(outDir, 'mesh.js') };
}
