import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

/**
 * Turns on the recording of AWS calls (lib/local/call-record.ts) for the whole run when the
 * `rehearsal` project is in it: every global setup runs before the first worker starts, and
 * each worker (and each process a test spawns: `bin/local.ts` in the beds) takes its
 * environment from this process, so the integration tests, the console tests and the beds all
 * record into one folder, which test/rehearsal/calls.test.ts judges last. MESH_CALL_RECORD set
 * already names a folder to keep.
 */
export default function setup(project: TestProject) {
  const given = process.env.MESH_CALL_RECORD;
  const folder = given || mkdtempSync(join(tmpdir(), 'mesh-calls-'));
  process.env.MESH_CALL_RECORD = folder;
  project.provide('callRecords', folder);
  return () => {
    if (!given) rmSync(folder, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    callRecords: string;
  }
}
