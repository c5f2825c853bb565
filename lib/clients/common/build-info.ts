import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What `mesh --version` and `mesh-host --version` print, and the agent reports as its version:
 * package.json's version and the build. `npm run package` writes both into the bundle
 * (tools/packaging/executable.ts defines `MESH_BUILD`), the build being the commit it was made
 * from; run from the tree, the version is read from package.json (or `MESH_SOURCE_VERSION`, with
 * which a bed stands a release in for the agent run from source) and the build is `source`. A
 * packaged build ignores `MESH_SOURCE_VERSION`: its version is the one it was built with.
 */
export type BuildInfo = { readonly version: string; readonly build: string };

declare const MESH_BUILD: BuildInfo | undefined;

let known: BuildInfo | undefined;

export function buildInfo(): BuildInfo {
  if (known) return known;
  if (typeof MESH_BUILD !== 'undefined' && MESH_BUILD) known = MESH_BUILD;
  else {
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, '../../../package.json'), 'utf8')) as {
      version: string;
    };
    known = { version: process.env.MESH_SOURCE_VERSION || manifest.version, build: 'source' };
  }
  return known;
}

/** The line `--version` prints: `mesh-host 0.1.0 (build 3ea7cc5)`. */
export const versionLine = (program: string, info: BuildInfo = buildInfo()) =>
  `${program} ${info.version} (build ${info.build})`;
