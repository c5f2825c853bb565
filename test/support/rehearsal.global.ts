import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { synthesize } from '../../tools/rehearsal/synth.ts';

/**
 * One synthesis of the app for the whole rehearsal project: the rehearsal test and every bed
 * run against it. MESH_REHEARSAL_CDK_OUT names an assembly to use instead (one synthesized
 * already, or one changed by hand to see the rehearsal fail).
 */
export default async function setup(project: TestProject) {
  const given = process.env.MESH_REHEARSAL_CDK_OUT;
  const cdkOut = given || mkdtempSync(join(tmpdir(), 'mesh-rehearsal-'));
  if (!given) await synthesize(cdkOut);
  project.provide('rehearsalCdkOut', cdkOut);
  return () => {
    if (!given) rmSync(cdkOut, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    rehearsalCdkOut: string;
  }
}
