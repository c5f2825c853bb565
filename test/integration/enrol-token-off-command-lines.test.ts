import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { tokenPattern } from '../../lib/server/core/enrolment/token.ts';
import { watch } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let api: RunningApi;
let fixture: ReturnType<typeof enrolmentFixture>;
let root: string;

beforeAll(async () => {
  const config = await provisionTestResources('tokenfile');
  fixture = enrolmentFixture(config);
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  root = mkdtempSync(join(tmpdir(), 'mesh-token-off-cmdline-'));
});

afterAll(async () => {
  await api?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function cli(
  entry: 'mesh' | 'mesh-host',
  args: string[],
  env: NodeJS.ProcessEnv = {},
  tokenOnCommandLine?: 'on purpose',
) {
  const child = watch(process.execPath, [`bin/${entry}.ts`, ...args], {
    env: { ...process.env, ...env },
    ...(tokenOnCommandLine ? { tokenOnCommandLine } : {}),
  });
  let stdout = '';
  child.child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const { code } = await child.exited();
  return { code, stdout, output: child.output() };
}

const issueTo = (node: string, file: string, ...more: string[]) =>
  cli('mesh', ['--api', api.url, '--json', 'token', 'issue', node, '--out', file, ...more]);

/** Every process's command line on this machine, as `ps` shows them to every user. */
function commandLines(): Array<{ pid: number; line: string }> {
  const lines: Array<{ pid: number; line: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.push({
        pid: Number(entry),
        line: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' '),
      });
    } catch {
      // the process ended between readdir and read
    }
  }
  return lines;
}

describe('mesh token issue --out FILE', () => {
  it('writes the token to FILE, owner-only, prints it nowhere, and refuses to replace FILE without --force', async () => {
    await fixture.addNode('file-1');
    const file = join(root, 'file-1.token');

    const first = await issueTo('file-1', file);
    const kept = readFileSync(file, 'utf8');
    const refused = await issueTo('file-1', file);
    const forced = await issueTo('file-1', file, '--force');

    expect(first.code).toBe(ExitCode.ok);
    expect(kept.trim()).toMatch(tokenPattern);
    expect(first.output).not.toContain(kept.trim());
    expect(JSON.parse(first.stdout)).toMatchObject({ node: 'file-1', tokenFile: file });
    expect(JSON.parse(first.stdout)).not.toHaveProperty('token');
    expect(refused.code).toBe(ExitCode.usage);
    expect(refused.output).toContain(
      `${file} already exists; pass --force to replace it; no token was issued`,
    );
    expect(forced.code).toBe(ExitCode.ok);
    // The refusal issued nothing, so the token --force replaced was the first one.
    expect(JSON.parse(forced.stdout).replaced).toBe(kept.trim().split('_')[1]);
    expect(readFileSync(file, 'utf8')).not.toBe(kept);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(root).filter((name) => name.startsWith('file-1.token'))).toEqual(['file-1.token']);
  });
});

describe('mesh-host enrol takes the token off the command line', () => {
  it('with MESH_TOKEN, no process on the machine shows the token while it enrols', async () => {
    await fixture.addNode('env-1');
    const file = join(root, 'env-1.token');
    await issueTo('env-1', file);
    const token = readFileSync(file, 'utf8').trim();
    const secret = token.split('_')[2] as string;

    const child = watch(
      process.execPath,
      ['bin/mesh-host.ts', 'enrol', '--api', api.url, '--node', 'env-1', '--dir', join(root, 'env-1')],
      { env: { ...process.env, MESH_TOKEN: token } },
    );
    let done = false;
    const exited = child.exited().finally(() => {
      done = true;
    });
    const showing: string[] = [];
    let sawEnrol = 0;
    while (!done) {
      for (const { pid, line } of commandLines()) {
        if (line.includes(secret)) showing.push(`${pid}: ${line}`);
        if (pid === child.child.pid && line.includes('enrol')) sawEnrol += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const { code } = await exited;

    expect(code, child.output()).toBe(ExitCode.ok);
    expect(child.output()).toMatch(/enrolled env-1 at /);
    // The scan ran while the enrol process was there to be seen, many times over.
    expect(sawEnrol).toBeGreaterThan(3);
    expect(showing).toEqual([]);
    expect(child.output()).not.toContain(secret);
  });

  it('reads --token-file; --token still works but warns; two sources, none, or a file with no token are usage errors', async () => {
    await fixture.addNode('file-2');
    await fixture.addNode('flag-1');
    const file = join(root, 'file-2.token');
    await issueTo('file-2', file);
    const flagFile = join(root, 'flag-1.token');
    await issueTo('flag-1', flagFile);
    const junk = join(root, 'junk.token');
    writeFileSync(junk, 'not-a-token-but-maybe-a-secret\n', { mode: 0o644 });
    const enrol = (node: string, ...more: string[]) => [
      'enrol',
      '--api',
      api.url,
      '--node',
      node,
      '--dir',
      join(root, node),
      ...more,
    ];

    chmodSync(file, 0o644);
    const fromFile = await cli('mesh-host', enrol('file-2', '--token-file', file));
    // The one token a test puts on a command line: to see it warned about.
    const fromFlag = await cli(
      'mesh-host',
      enrol('flag-1', '--token', readFileSync(flagFile, 'utf8').trim()),
      {},
      'on purpose',
    );
    const both = await cli('mesh-host', enrol('file-2', '--token-file', file), { MESH_TOKEN: 'mesh_x' });
    const none = await cli('mesh-host', enrol('file-2'));
    const notToken = await cli('mesh-host', enrol('file-2', '--token-file', junk));

    expect(fromFile.code, fromFile.output).toBe(ExitCode.ok);
    expect(fromFile.output).toContain(`warning: ${file} can be read by other users (mode 644)`);
    expect(fromFile.output).not.toContain('--token puts');
    expect(fromFlag.code, fromFlag.output).toBe(ExitCode.ok);
    expect(fromFlag.output).toContain('warning: --token puts the token in the process list');
    expect(both.code).toBe(ExitCode.usage);
    expect(both.output).toContain('MESH_TOKEN is set and so is --token-file: give the token one way only');
    expect(none.code).toBe(ExitCode.usage);
    expect(none.output).toContain('no token: set MESH_TOKEN or pass --token-file FILE');
    expect(notToken.code).toBe(ExitCode.usage);
    expect(notToken.output).toContain(`--token-file ${junk} holds no token`);
    expect(notToken.output).not.toContain('maybe-a-secret');
  });
});
