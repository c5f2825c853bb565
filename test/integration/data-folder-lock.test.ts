import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockDataFolder, lockFileName } from '../../lib/local/data-folder-lock.ts';
import { runtimeLines } from '../../lib/local/log-lines.ts';
import { isAlive, type Watched, watch } from '../support/processes.ts';

/**
 * Issue 36, finding 6: `kill -9` of `npm start` orphaned DynamoDB Local, and the next `npm start`
 * opened the same data folder with a second JVM, without a word. Now a data folder has one
 * control plane (a lock naming its pid), a second start on it is refused, and the store notices
 * its parent gone and stops: the next start takes the folder over.
 */
const startupMs = 90_000;
const folder = mkdtempSync(join(tmpdir(), 'mesh-lock-'));
const started: Watched[] = [];

afterAll(() => {
  for (const run of started) run.child.kill('SIGKILL');
  rmSync(folder, { recursive: true, force: true });
});

const env = (dataDir: string) => {
  const vars: NodeJS.ProcessEnv = {
    ...process.env,
    MESH_PORT: '0',
    MESH_MQTT_PORT: '0',
    MESH_DATA: dataDir,
    MESH_LOG_FORMAT: 'json',
  };
  delete vars.AWS_ENDPOINT_URL;
  delete vars.AWS_ENDPOINT_URL_DYNAMODB;
  delete vars.AWS_ENDPOINT_URL_SQS;
  return vars;
};

const start = (dataDir: string) => {
  const run = watch(process.execPath, ['bin/local.ts'], { env: env(dataDir) });
  started.push(run);
  return run;
};

const lockOf = (dataDir: string) =>
  JSON.parse(readFileSync(join(dataDir, lockFileName), 'utf8')) as { pid: number; children: number[] };

async function gone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

describe('one control plane per data folder, and no store left behind', () => {
  it(
    'refuses a second start on a folder in use; after kill -9 its store stops by itself and the next start takes the folder over',
    async () => {
      const dataDir = join(folder, 'data');
      const first = start(dataDir);
      await first.waitForCode(runtimeLines.ready, { timeoutMs: startupMs });
      const lock = lockOf(dataDir);
      expect(lock.pid).toBe(first.child.pid);
      const [store] = lock.children;
      expect(store !== undefined && isAlive(store)).toBe(true);

      const second = start(dataDir);
      const refused = await second.exited();
      expect(refused.code).toBe(1);
      expect(second.output()).toContain(
        `the data folder ${dataDir} is in use by another control plane (pid ${first.child.pid})`,
      );
      expect(second.output()).not.toContain('starting the emulators');
      expect(lockOf(dataDir).pid).toBe(first.child.pid);

      first.child.kill('SIGKILL');
      await first.exited();
      // the store notices its parent gone: no orphan JVM on the folder
      expect(await gone(store as number, 15_000)).toBe(true);

      const third = start(dataDir);
      await third.waitForCode(runtimeLines.ready, { timeoutMs: startupMs });
      expect(third.output()).toContain('took over the data folder from a control plane that is gone');
      expect(lockOf(dataDir).pid).toBe(third.child.pid);
      third.child.kill('SIGTERM');
      const ended = await third.exited();
      expect(ended, third.output()).toEqual({ code: 0, signal: null });
      expect(() => lockOf(dataDir)).toThrow();
    },
    4 * startupMs,
  );

  it('takes over a lock whose pid is gone, and stops a store of an older launcher it names', async () => {
    const dataDir = mkdtempSync(join(folder, 'stale-'));
    const said: string[] = [];
    // a process that is gone by now
    const { spawnSync } = await import('node:child_process');
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dataDir, lockFileName), JSON.stringify({ pid: dead, children: [] }));
    const lock = lockDataFolder(dataDir, (line) => said.push(line));
    expect(lockOf(dataDir).pid).toBe(process.pid);
    expect(said).toEqual([`took over the data folder from a control plane that is gone (pid ${dead})`]);
    expect(() => lockDataFolder(dataDir)).toThrow(`in use by another control plane (pid ${process.pid})`);
    lock.release();
    expect(() => lockOf(dataDir)).toThrow();
  });
});
