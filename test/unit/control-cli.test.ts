import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';

const mesh = fileURLToPath(new URL('../../bin/mesh.ts', import.meta.url));

/** Runs `mesh` as a person would; bad arguments are refused before any request is made. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [mesh, '--api', 'http://127.0.0.1:9', ...args],
      { timeout: 20_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
      },
    );
  });
}

describe('mesh build / mesh upgrade with more than one bad argument', () => {
  for (const args of [
    ['build', 'Bad Module', 'not a version!', '--id', '-bad-', '--json'],
    ['upgrade', 'Bad Module', 'not a version!', '--json'],
  ]) {
    it(`prints one JSON document naming every bad argument (${args[0]})`, async () => {
      // Act
      const { code, stdout, stderr } = await run(args);
      // Assess
      expect(code).toBe(ExitCode.usage);
      const document = JSON.parse(stdout);
      const named = args[0] === 'build' ? ['MODULE', 'VERSION', '--id'] : ['MODULE', 'VERSION'];
      expect(document.error).toMatchObject({ code: 'usage' });
      expect(document.error.problems.map((problem: { argument: string }) => problem.argument)).toEqual(named);
      expect(stderr.trim().split('\n')).toHaveLength(named.length);
    });
  }

  it('prints one line per bad argument for people and no JSON', async () => {
    const { code, stdout, stderr } = await run(['upgrade', 'Bad Module', 'not a version!']);
    expect(code).toBe(ExitCode.usage);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^mesh: MODULE: .+\nmesh: VERSION: .+\n$/);
  });
});
