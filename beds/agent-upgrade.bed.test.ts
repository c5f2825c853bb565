import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { buildInfo } from '../lib/clients/common/build-info.ts';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import {
  newReleaseKey,
  type ReleaseManifest,
  signRelease,
  transferFileOf,
} from '../lib/server/core/agent-release/release.ts';
import type { RolloutRecord } from '../lib/server/core/rollout/record.ts';
import { developmentReleaseKey } from '../tools/packaging/development-release-key.ts';
import {
  addAndEnrol,
  appliedAsSent,
  type Bed,
  type CommandResult,
  eventually,
  expectOk,
  inBed,
  status,
} from './support/bed.ts';

const hosts = ['agent-1', 'agent-2', 'agent-3'];
const root = join(import.meta.dirname, '..');
/** A key the control plane takes releases by and no host trusts: what a bad signature is to a host. */
const strangerKey = newReleaseKey();

/**
 * A release the bed builds: a shell script standing in for mesh-host, signed as `npm run package`
 * output is signed (the development key), with its manifest beside it as `mesh agent publish` reads it.
 */
function release(
  bed: Bed,
  version: string,
  script: string,
  key: { privateKeyPem: string } = developmentReleaseKey,
  options: { readonly compressed?: boolean } = {},
) {
  const file = join(bed.hostDir('releases'), `mesh-host-${version}`);
  const executable = Buffer.from(`#!/bin/sh\n${script}\n`);
  writeFileSync(file, executable, { mode: 0o755 });
  // compressed as npm run package --sign-key writes it: the .br is what is uploaded and downloaded
  const packed = options.compressed ? brotliCompressSync(executable) : undefined;
  if (packed) writeFileSync(transferFileOf(file, 'br'), packed);
  const manifest: ReleaseManifest = {
    version,
    arch: process.arch as 'x64' | 'arm64',
    sha256: createHash('sha256').update(executable).digest('hex'),
    bytes: executable.length,
    ...(packed
      ? {
          transfer: {
            encoding: 'br' as const,
            sha256: createHash('sha256').update(packed).digest('hex'),
            bytes: packed.length,
          },
        }
      : {}),
  };
  writeFileSync(`${file}.release.json`, JSON.stringify(signRelease(manifest, key.privateKeyPem)));
  return file;
}

/** Each host's agent version as it reported it (`mesh status`'s agent column). */
const agents = async (bed: Bed) => {
  const all = await status(bed);
  return hosts.map((node) => all.get(node)?.facts?.agent);
};

const slotsOf = (bed: Bed, node: string) =>
  JSON.parse(readFileSync(join(bed.hostDir(node), 'agent', 'slots.json'), 'utf8')) as Record<string, unknown>;

/**
 * An upgrade of VERSION halted at its first wave: agent-1 failed with STEP, its supervisor still
 * on B with VERSION's OUTCOME kept.
 */
async function haltedOnFirstHost(
  bed: Bed,
  upgraded: CommandResult,
  version: string,
  step: string,
  outcome: 'rolled-back' | 'refused',
): Promise<RolloutRecord> {
  expect(upgraded.code, upgraded.output).toBe(ExitCode.rolloutHalted);
  const halted = upgraded.json as RolloutRecord;
  expect(halted.waves[0]?.nodes).toEqual([
    expect.objectContaining({ node: 'agent-1', state: 'failed', step: expect.stringContaining(step) }),
  ]);
  expect(slotsOf(bed, 'agent-1')).toMatchObject({ current: '9.0.0-b', outcome: { version, outcome } });
  return halted;
}

/** The rollout once `mesh rollout show` says it is in STATE. */
const rolloutOnceIn = (bed: Bed, id: string, state: RolloutRecord['state']) =>
  eventually(`rollout ${id} ${state}`, async () => {
    const shown = (await bed.mesh('rollout', 'show', id)).json as RolloutRecord;
    return shown.state === state ? shown : undefined;
  });

/**
 * Issue 40's Done-when: three hosts run the agent from source under `mesh-host supervise` (the
 * path the packaged unit takes), on version A. `mesh agent upgrade B --waves 1,100%` brings all
 * three to B (a compressed release, as npm run package --sign-key writes one), a wrapper that runs the agent from source reporting B; a release that crashes at
 * start is rolled back on the first host and halts its rollout (its --auto-undo then asks that
 * host for B again); a release whose signature no host
 * trusts is refused by the first host before anything is replaced, and halts its rollout too; one
 * that starts and never reaches the control plane is rolled back at the trial's bound. Then undone
 * as rollouts are: the halted upgrade's undo asks its host for B again, and the upgrade to B's
 * undo, refused until A is published, brings all three back to A.
 */
it('an agent upgrade in waves reaches every host; a crashing, a forged and a silent release each halt it; undo and --auto-undo take it back', () =>
  inBed('agent-upgrade', async (bed) => {
    const a = buildInfo().version;
    await bed.startControlPlane({
      MESH_RELEASE_KEYS: `${developmentReleaseKey.publicKey},${strangerKey.publicKey}`,
    });
    for (const node of hosts) {
      await addAndEnrol(bed, node);
      const dir = bed.hostDir(node);
      bed.spawn(
        `host ${node}`,
        [
          join(root, 'bin/mesh-host.ts'),
          'supervise',
          '--dir',
          dir,
          '--trial-bound',
          '60',
          '--',
          'run',
          '--dir',
          dir,
          '--apply',
          `${process.execPath} ${join(root, 'beds/support/apply-hook.ts')}`,
        ],
        {
          ...process.env,
          MESH_RELEASE_KEYS: developmentReleaseKey.publicKey,
          MESH_LOG_FORMAT: 'json',
          BED_RECORD_DIR: bed.recordDir(node),
          BED_APPLY_DELAY_MS: '0',
        },
      );
    }
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await appliedAsSent(bed, hosts);
    await eventually('three hosts to report agent A', async () =>
      (await agents(bed)).every((v) => v === a) ? true : undefined,
    );

    const asSource = (version: string) =>
      `MESH_SOURCE_VERSION=${version} exec ${process.execPath} ${join(root, 'bin/mesh-host.ts')} "$@"`;
    const published = await bed.mesh(
      'agent',
      'publish',
      release(bed, '9.0.0-b', asSource('9.0.0-b'), developmentReleaseKey, { compressed: true }),
      release(bed, '9.0.0-crash', 'echo "crashing at start" >&2; exit 3'),
      release(bed, '9.0.0-forged', asSource('9.0.0-forged'), strangerKey),
      release(bed, '9.0.0-silent', 'exec sleep 600'),
    );
    expect(published.code, published.output).toBe(ExitCode.ok);

    const upgraded = await bed.mesh('agent', 'upgrade', '9.0.0-b', '--waves', '1,100%');
    expect(upgraded.code, upgraded.output).toBe(ExitCode.ok);
    const toB = (upgraded.json as RolloutRecord).id;
    expect((upgraded.json as RolloutRecord).state).toBe('done');
    await eventually('three hosts to report agent B', async () =>
      (await agents(bed)).every((v) => v === '9.0.0-b') ? true : undefined,
    );
    await appliedAsSent(bed, hosts);
    expect(hosts.map((node) => slotsOf(bed, node).current)).toEqual(hosts.map(() => '9.0.0-b'));

    // with --auto-undo, the halt takes it back at once: agent-1 is asked for B again
    const halted = await haltedOnFirstHost(
      bed,
      await bed.mesh('agent', 'upgrade', '9.0.0-crash', '--waves', '1,100%', '--auto-undo'),
      '9.0.0-crash',
      'agent 9.0.0-crash was rolled back: it exited 3 before it reported',
      'rolled-back',
    );
    expect(await agents(bed)).toEqual(hosts.map(() => '9.0.0-b'));
    const undoneByItself = await rolloutOnceIn(bed, halted.id, 'undone');
    const autoUndo = await rolloutOnceIn(bed, undoneByItself.undoneBy ?? '', 'done');
    expect(autoUndo).toMatchObject({
      origin: { kind: 'agent-undo', rollout: halted.id, version: '9.0.0-crash' },
    });
    await appliedAsSent(bed, hosts);

    await haltedOnFirstHost(
      bed,
      await bed.mesh('agent', 'upgrade', '9.0.0-forged', '--waves', '1,100%'),
      '9.0.0-forged',
      'no key this host trusts signed it',
      'refused',
    );
    expect(existsSync(join(bed.hostDir('agent-1'), 'agent', 'releases', '9.0.0-forged'))).toBe(false);
    expect(await agents(bed)).toEqual(hosts.map(() => '9.0.0-b'));

    // a release that starts and never reaches the control plane is rolled back at the bound
    const { id: silentId } = await haltedOnFirstHost(
      bed,
      await bed.mesh('agent', 'upgrade', '9.0.0-silent', '--waves', '1,100%'),
      '9.0.0-silent',
      'agent 9.0.0-silent was rolled back: it did not report within 60 s',
      'rolled-back',
    );

    // undone as rollouts are: the halted upgrade's node is asked for what its host ran before (B)
    const undoSilent = await bed.mesh('rollout', 'undo', silentId);
    expect(undoSilent.code, undoSilent.output).toBe(ExitCode.ok);
    expect(undoSilent.json as RolloutRecord).toMatchObject({
      state: 'done',
      origin: { kind: 'agent-undo', rollout: silentId, version: '9.0.0-silent' },
    });
    await appliedAsSent(bed, hosts);

    // the upgrade to B taken back: refused while A, what the hosts ran before, is not published
    const unpublished = await bed.mesh('rollout', 'undo', toB);
    expect(unpublished.code, unpublished.output).toBe(ExitCode.notFound);
    expect(unpublished.output).toContain(`no release of mesh-host ${a} is published`);
    const republished = await bed.mesh('agent', 'publish', release(bed, a, asSource(a)));
    expect(republished.code, republished.output).toBe(ExitCode.ok);
    const undoB = await bed.mesh('rollout', 'undo', toB);
    expect(undoB.code, undoB.output).toBe(ExitCode.ok);
    expect((undoB.json as RolloutRecord).state).toBe('done');
    await eventually('three hosts to report agent A again', async () =>
      (await agents(bed)).every((v) => v === a) ? true : undefined,
    );
    await appliedAsSent(bed, hosts);
    expect(hosts.map((node) => slotsOf(bed, node).current)).toEqual(hosts.map(() => a));
  }));
