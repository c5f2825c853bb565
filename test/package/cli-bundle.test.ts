import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { bundleCli } from '../../tools/cli-bundle/bundle.ts';
import { fakeApi, meshBin } from '../support/fake-api.ts';

const exec = promisify(execFile);

/** Runs one `mesh`, bundled or from source, for its output and exit. */
async function run(entry: string, args: readonly string[]) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [entry, ...args], { timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the bundled mesh (npm run build:cli) behaves as bin/mesh.ts from source', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-cli-bundle-'));
  let entry: string;
  beforeAll(async () => {
    ({ entry } = await bundleCli(join(dir, 'cli')));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the same help, and the same answer of a command loaded on its own', async () => {
    const [bundled, source] = await Promise.all([run(entry, ['--help']), run(meshBin, ['--help'])]);
    expect(bundled).toEqual(source);
    expect(bundled.stdout).toContain('Usage: mesh');

    const api = await fakeApi(() => undefined);
    try {
      const args = ['--api', api.url, 'audit', '--action', 'nonsense'];
      const [refusedBundled, refusedSource] = await Promise.all([run(entry, args), run(meshBin, args)]);
      expect(refusedBundled.code).toBe(ExitCode.usage);
      expect(refusedBundled).toEqual(refusedSource);
    } finally {
      await api.close();
    }
  });
});
