import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { expect, it } from 'vitest';
import { agentLines, commandLines } from '../lib/clients/host/log-lines.ts';
import { codedLinesIn } from '../test/support/processes.ts';
import { ensureExecutable } from '../tools/packaging/package.ts';
import { eventually, expectOk, inBed, status } from './support/bed.ts';

const applyHook = resolve(import.meta.dirname, 'support/apply-hook.ts');

/**
 * The agent as an operator installs it: the packaged single executable (built into dist/ if
 * no current build is there), copied alone into a folder with no node_modules, run with a PATH
 * that has no `node` and nothing of this environment. It enrols with a token file written by
 * `mesh token issue --out`, applies what it is pushed and reports. Only the apply hook is a
 * Node script, called by its absolute path, as any hook may be.
 */
it('the packaged mesh-host, alone with no node on PATH, enrols, applies a push and is seen applied', () =>
  inBed('packaged-agent', async (bed) => {
    const built = await ensureExecutable('mesh-host');
    const binDir = join(bed.dir, 'machine', 'usr', 'local', 'bin');
    mkdirSync(binDir, { recursive: true });
    const agent = join(binDir, 'mesh-host');
    copyFileSync(built.path, agent);
    chmodSync(agent, 0o755);
    const machine = {
      cwd: join(bed.dir, 'machine'),
      env: {
        PATH: binDir,
        MESH_LOG_FORMAT: 'json',
        BED_RECORD_DIR: bed.recordDir('edge'),
        BED_APPLY_DELAY_MS: '0',
      },
    };
    const nodeOnPath = machine.env.PATH.split(delimiter).filter((dir) => existsSync(join(dir, 'node')));
    expect(nodeOnPath).toEqual([]);
    expect(existsSync(join(bed.dir, 'node_modules'))).toBe(false);

    await bed.startControlPlane();
    await expectOk(bed.mesh('node', 'add', 'edge'), 'mesh node add edge');
    const tokenFile = bed.tokenFile('edge');
    await expectOk(bed.mesh('token', 'issue', 'edge', '--out', tokenFile), 'mesh token issue edge --out');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);

    const hostDir = bed.hostDir('edge');
    const enrolled = await bed.runExecutable(
      'packaged mesh-host enrol',
      agent,
      ['enrol', '--api', bed.apiUrl, '--node', 'edge', '--token-file', tokenFile, '--dir', hostDir],
      machine,
    );
    rmSync(tokenFile);
    expect(enrolled.code, enrolled.output).toBe(0);
    expect(codedLinesIn(enrolled.output)).toContainEqual(
      expect.objectContaining({ code: commandLines.enrolled.code, node: 'edge' }),
    );

    const host = bed.spawnExecutable(
      'packaged host edge',
      agent,
      ['run', '--dir', hostDir, '--interval', '1', '--apply', `${process.execPath} ${applyHook}`],
      machine,
    );
    await host.waitForCode(agentLines.waitingFirst);
    // The process running is the artifact itself, not a Node started on its behalf.
    expect(readlinkSync(`/proc/${host.child.pid}/exe`)).toBe(agent);

    await expectOk(bed.mesh('assign', 'edge', 'proxy'), 'mesh assign edge proxy');
    const push = await expectOk(bed.mesh('push', 'edge'), 'mesh push edge');
    const revision = (push.json as { pushed: { revision: number } }).pushed.revision;

    const edge = await eventually('the control plane to see edge applied', async () => {
      const entry = (await status(bed)).get('edge');
      return entry?.reportState === 'applied' && entry.appliedRevision === revision ? entry : undefined;
    });
    expect(edge.behind).toBe(false);
    const applied = JSON.parse(
      readFileSync(join(bed.recordDir('edge'), `applied-${revision}.json`), 'utf8'),
    ) as { node: string; modules: Array<{ name: string }> };
    expect(applied.node).toBe('edge');
    expect(applied.modules.map((module) => module.name)).toEqual(['proxy']);
  }));
