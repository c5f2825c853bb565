import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { tokenPattern } from '../../lib/server/core/enrolment/token.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { brokerAndThreeWebs } from '../support/mesh-files.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

let api: RunningApi;
let parts: Parts;
const folder = mkdtempSync(join(tmpdir(), 'mesh-file-cli-'));
const mesh = (args: string[]) => runMesh(api.url, args);
const file = (name: string, text: string) => {
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
};

const meshFile = brokerAndThreeWebs;

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('meshfilecli'));
  api = await startLocalApi({ port: 0, parts });
});

afterAll(async () => {
  await api?.stop();
});

describe('mesh apply, diff, export and token issue --unenrolled', () => {
  it('prints a bad file as FILE:LINE:COL and exits 2; applies a good one; diff exits 0, then 1', async () => {
    const bad = file('bad.yaml', meshFile.replace('broker-1/rabbit', 'broker-3/rabbit'));
    const refused = await mesh(['apply', '-f', bad]);
    expect(refused.code).toBe(ExitCode.usage);
    expect(refused.output).toContain(
      `${bad}:12:26: broker-3/rabbit: no node broker-3 in the file [unknown-provider]`,
    );

    const good = file('mesh.yaml', meshFile);
    const applied = await mesh(['apply', '-f', good]);
    expect(applied.code).toBe(ExitCode.ok);
    expect(applied.stdout).toContain('added 4 nodes, 4 modules, 3 relations');
    expect((await mesh(['diff', '-f', good])).code).toBe(0);
    const changed = file('changed.yaml', meshFile.replace('web-[1-3]', 'web-[1-4]'));
    const differs = await mesh(['diff', '-f', changed]);
    expect(differs.code).toBe(1);
    expect(differs.stdout).toContain('add nodes (1): web-4');
    expect((await mesh(['diff', '-f', join(folder, 'missing.yaml')])).code).toBe(ExitCode.usage);

    const webs = await mesh(['status', '--on', 'role=web']);
    expect(webs.stdout.split('\n').filter((line) => line.startsWith('web-'))).toHaveLength(3);
    expect(webs.stdout).not.toContain('broker-1 ');
    expect((await mesh(['status', '--on', 'role=='])).code).toBe(ExitCode.usage);

    const exported = await mesh(['export']);
    expect(exported.code).toBe(ExitCode.ok);
    expect(exported.stdout).toContain('web-3:');
  });

  it('refuses a file larger than an upload takes before sending it, and a 10,000-deep one with a clear problem (issue 36, finding 6)', async () => {
    const huge = file('huge.yaml', `version: 1\n# ${'x'.repeat(64 * 1024 * 1024)}\n`);
    const tooLarge = await mesh(['apply', '-f', huge]);
    expect(tooLarge.code).toBe(ExitCode.usage);
    expect(tooLarge.output).toContain(`${huge} holds`);
    expect(tooLarge.output).toContain('over the 67108864 (64 MiB) a mesh file may be: nothing was sent');
    expect(tooLarge.output).not.toContain('uploaded');
    const deep = file('deep.yaml', `version: 1\nnodes: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`);
    const refused = await mesh(['diff', '-f', deep]);
    expect(refused.code).toBe(ExitCode.usage);
    expect(refused.output).toContain('the file nests deeper than the 32 levels a mesh file may');
    expect(refused.output).toContain('[too-deep]');
    expect(refused.output).not.toContain('call stack');
  });

  it('prunes through the admin’s route: mesh apply --prune removes what the file drops (issue 36, finding 2)', async () => {
    const fewer = file('fewer.yaml', meshFile.replace('web-[1-3]', 'web-[1-2]'));
    const pruned = await mesh(['apply', '-f', fewer, '--prune', '--allow-mass-removal', '--json']);
    expect(pruned.code).toBe(ExitCode.ok);
    expect((JSON.parse(pruned.stdout) as { removed: { nodes: number } }).removed.nodes).toBe(1);
    const back = await mesh(['apply', '-f', file('mesh-again.yaml', meshFile)]);
    expect(back.code).toBe(ExitCode.ok);
  });

  it('writes one 0600 token file per node not enrolled, printing no token; a second run finds none lapsed', async () => {
    const out = join(folder, 'tokens');
    const issued = await mesh(['token', 'issue', '--unenrolled', '--out-dir', out]);
    expect(issued.code).toBe(ExitCode.ok);
    expect(issued.output).not.toMatch(tokenPattern);
    expect(issued.stdout).toContain(`wrote 4 token files (mode 0600) to ${out}`);
    const files = readdirSync(out).sort();
    expect(files).toEqual(['broker-1.token', 'web-1.token', 'web-2.token', 'web-3.token']);
    for (const name of files) {
      expect(statSync(join(out, name)).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(out, name), 'utf8').trim()).toMatch(tokenPattern);
    }
    const again = await mesh(['token', 'issue', '--unenrolled', '--out-dir', join(folder, 'again')]);
    expect(again.stdout).toContain('wrote 0 token files');
  });

  it('push --on pushes each node its selector picks, as push NODE does, and refuses a node beside it', async () => {
    const pushed = await mesh(['push', '--on', 'role=web']);
    expect(pushed.code).toBe(ExitCode.ok);
    for (const node of ['web-1', 'web-2', 'web-3'])
      expect(pushed.stdout).toContain(`pushed ${node} at revision`);
    expect(pushed.stdout).not.toContain('pushed broker-1');
    expect(pushed.output).toContain('pushing web-3 (3 of 3 matching role=web)');
    expect(pushed.stdout).toContain('the mesh is consistent');
    expect((await mesh(['push', '--on', 'role=web', 'web-1'])).code).toBe(ExitCode.usage);
    expect((await mesh(['push', '--on', 'role=db'])).stdout).toContain(
      'no node matches role=db: nothing pushed',
    );
  });

  it('apply --from-plan refuses a stale saved plan (exit 4), naming what moved since, and applies a current one', async () => {
    const grown = file('grown.yaml', meshFile.replace('web-[1-3]', 'web-[1-5]'));
    const savePlan = async (name: string) => {
      const planned = await mesh(['--json', 'apply', '-f', grown, '--plan']);
      expect(planned.code).toBe(ExitCode.ok);
      return file(name, planned.stdout);
    };
    const saved = await savePlan('plan.json');
    expect((await mesh(['node', 'add', 'web-5'])).code).toBe(ExitCode.ok);
    const stale = await mesh(['apply', '-f', grown, '--from-plan', saved]);
    expect(stale.code).toBe(ExitCode.refused);
    expect(stale.output).toContain(
      'the mesh moved since the plan was made: 1 node added (web-5); plan again',
    );
    const applied = await mesh(['apply', '-f', grown, '--from-plan', await savePlan('again.json')]);
    expect(applied.code).toBe(ExitCode.ok);
    expect(applied.stdout).toMatch(/wrote \d+ nodes: .*web-4, web-5/);
  });

  it('sets the versions the file gives as upgrades, exports them, and plans a version change old → new', async () => {
    const versioned = file(
      'versioned.yaml',
      `version: 1\nmodules:\n  rabbit: {version: "3.13.1"}\n${meshFile.slice('version: 1\n'.length)}`,
    );
    const applied = await mesh(['apply', '-f', versioned, '--prune', '--allow-mass-removal']);
    expect(applied.code, applied.output).toBe(ExitCode.ok);
    expect(applied.stdout).toContain('version rabbit (none) → 3.13.1: queued upgrade:rabbit');
    // until the control queue's consumer takes the upgrade, the file still differs from the mesh
    const pending = await mesh(['diff', '-f', versioned]);
    expect(pending.code, pending.output).toBe(1);
    expect(pending.stdout).toContain('set module versions (1): rabbit ((none) → 3.13.1)');
    // the consumer takes it: none runs beside this API
    await parts.moduleVersions.setModuleVersion('rabbit', '3.13.1', localActor());
    const same = await mesh(['diff', '-f', versioned]);
    expect(same.code, same.output).toBe(0);
    expect((await mesh(['export'])).stdout).toContain('modules:\n  rabbit:\n    version: "3.13.1"\nnodes:\n');
    const bumped = file('bumped.yaml', readFileSync(versioned, 'utf8').replace('3.13.1', '3.14.0'));
    const differs = await mesh(['diff', '-f', bumped]);
    expect(differs.code, differs.output).toBe(1);
    expect(differs.stdout).toContain('set module versions (1): rabbit (3.13.1 → 3.14.0)');
  });
});
