import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import { signingKeyOf } from '../../lib/clients/host/keys.ts';
import { installRelease, releasePath } from '../../lib/clients/host/release-slots.ts';
import { downloadFile, downloadStream, uploadFile } from '../../lib/clients/http/release-transfer.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import type { StoredRelease, Transfer } from '../../lib/server/core/agent-release/ports.ts';
import {
  newReleaseKey,
  type ReleaseManifest,
  type SignedRelease,
  signRelease,
} from '../../lib/server/core/agent-release/release.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { checkConfig } from '../../lib/server/setup/config.ts';
import { enrolNode } from '../support/enrolled-nodes.ts';
import { hostCalls } from '../support/host-calls.ts';
import { printedJson, runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Releases served by the control plane, on DynamoDB Local and the local runtime's release files
 * (docs/host-agent.md, "Releases"): `mesh agent publish FILE` asks, uploads the executable to
 * the URL granted, asks again and is published (audited); a manifest no trusted key signed is
 * refused before any upload is granted, an upload that is not the executable granted is
 * refused and kept nowhere; a version names one executable; a viewer lists them; a host fetches
 * the manifest and downloads the executable by its own key only.
 */
const releaseKey = newReleaseKey();
const strangerKey = newReleaseKey();
let folder: string;
let parts: LocalParts;
let api: RunningApi;
let work: string;

beforeAll(async () => {
  const provisioned = await provisionTestResources('releases');
  folder = await mkdtemp(join(tmpdir(), 'mesh-release-files-'));
  work = await mkdtemp(join(tmpdir(), 'mesh-release-work-'));
  const config = checkConfig({ ...provisioned, releaseKeys: [releaseKey.publicKey], releaseFolder: folder });
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts, releaseFiles: parts.localReleaseFiles });
});

afterAll(async () => {
  await api?.stop();
});

/** An executable of `bytes` bytes and its manifest, written as `mesh agent publish` reads them. */
async function releaseFile(version: string, key = releaseKey, bytes = 300_000) {
  const executable = Buffer.alloc(bytes, version);
  const manifest: ReleaseManifest = {
    version,
    arch: 'x64',
    bytes,
    sha256: createHash('sha256').update(executable).digest('hex'),
  };
  const file = join(work, `mesh-host-${version}`);
  const signed = signRelease(manifest, key.privateKeyPem);
  await writeFile(file, executable);
  await writeFile(`${file}.release.json`, JSON.stringify(signed));
  return { file, signed, executable };
}

const post = (release: SignedRelease) => hostCalls(api.url).operator('POST', '/agent/releases', release);

describe('mesh agent publish', () => {
  it('uploads the executable where it is granted, publishes it once, and audits it', async () => {
    const { file, signed } = await releaseFile('1.1.0');
    const published = await runMesh(api.url, ['agent', 'publish', file]);
    expect(published.code, published.output).toBe(ExitCode.ok);
    expect(published.output).toMatch(
      /uploading .*mesh-host-1\.1\.0 \(0\.3 MiB\) for release 1\.1\.0 \(x64\)/,
    );
    expect(published.output).toMatch(/published release 1\.1\.0 \(x64\): 0\.3 MiB, SHA-256 [0-9a-f]{64}/);
    expect(await readdir(folder)).toEqual([signed.manifest.sha256]);

    const again = await runMesh(api.url, ['--json', 'agent', 'publish', file]);
    expect(again.code).toBe(ExitCode.ok);
    const { published: releases } = printedJson(again.stdout) as { published: StoredRelease[] };
    expect(releases.map((r) => r.manifest)).toEqual([signed.manifest]);

    const listed = await runMesh(api.url, ['--json', 'agent', 'releases']);
    expect(
      (printedJson(listed.stdout) as { releases: StoredRelease[] }).releases.map((r) => r.manifest.version),
    ).toEqual(['1.1.0']);

    const audit = await hostCalls(api.url).operator('GET', '/audit?action=agent.publish');
    expect(JSON.stringify(audit.body)).toContain('release:1.1.0/x64');
  });

  it('refuses a manifest no trusted key signed before any upload, and writes nothing', async () => {
    const { file, signed } = await releaseFile('1.2.0', strangerKey);
    const refused = await post(signed);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: { code: 'release_bad_signature' } });
    const cli = await runMesh(api.url, ['agent', 'publish', file]);
    expect(cli.code).toBe(ExitCode.usage);
    expect(cli.output).toContain('no release key the control plane trusts signed its manifest');
    expect((await hostCalls(api.url).operator('GET', '/agent/releases')).body.releases).toHaveLength(1);
    expect(await readdir(folder)).toHaveLength(1);
  });

  it('keeps nothing of an upload that is not the executable granted, and publishes nothing', async () => {
    const { signed } = await releaseFile('1.3.0');
    const asked = await post(signed);
    expect(asked.status).toBe(202);
    const upload = (asked.body as { upload: Transfer }).upload;
    const other = join(work, 'other');
    await writeFile(other, Buffer.alloc(signed.manifest.bytes, 'x'));
    await expect(uploadFile(upload, other)).rejects.toThrow(/release_bad_digest/);
    await expect(
      uploadFile({ ...upload, url: upload.url.replace(/signature=[0-9a-f]+/, 'signature=00') }, other),
    ).rejects.toThrow(/transfer_not_granted/);
    expect(await readdir(folder)).toHaveLength(1);
    expect((await post(signed)).status).toBe(202);
  });

  it('holds a version to one executable', async () => {
    const { signed } = await releaseFile('1.1.0', releaseKey, 1000);
    const asked = await post(signed);
    expect(asked.status).toBe(409);
    expect(asked.body).toMatchObject({ error: { code: 'release_conflict' } });
  });
});

describe('a host', () => {
  it('fetches a release by its own key and downloads the executable the manifest names', async () => {
    await parts.meshService.addNode('web-1', {}, localActor());
    const keys = await enrolNode(parts, 'web-1');
    const host = hostApiClient(api.url, signingKeyOf('web-1', keys));
    const answer = await host.send('GET', '/hosts/web-1/releases/1.1.0/x64');
    expect(answer.status).toBe(200);
    const { release, download } = answer.body as { release: StoredRelease; download: Transfer };
    const into = join(work, 'downloaded');
    expect(await downloadFile(download, into, release.manifest.bytes)).toEqual({
      bytes: release.manifest.bytes,
      sha256: release.manifest.sha256,
    });
    expect((await host.send('GET', '/hosts/web-1/releases/9.9.9/x64')).body).toMatchObject({
      error: { code: 'release_not_found' },
    });
    expect((await fetch(`${api.url}/hosts/web-1/releases/1.1.0/x64`)).status).toBe(401);
  });

  it('takes a compressed release: mesh agent publish uploads the .br its manifest names, the host installs the executable', async () => {
    const executable = Buffer.from(
      `#!/bin/sh\nexit 0\n# ${'an executable compresses well '.repeat(20_000)}\n`,
    );
    const packed = brotliCompressSync(executable);
    const file = join(work, 'mesh-host-1.4.0');
    const manifest: ReleaseManifest = {
      version: '1.4.0',
      arch: 'x64',
      bytes: executable.length,
      sha256: createHash('sha256').update(executable).digest('hex'),
      transfer: {
        encoding: 'br',
        bytes: packed.length,
        sha256: createHash('sha256').update(packed).digest('hex'),
      },
    };
    await writeFile(file, executable);
    await writeFile(`${file}.release.json`, JSON.stringify(signRelease(manifest, releaseKey.privateKeyPem)));
    // the compressed file the manifest names is missing: refused before anything is asked
    const missing = await runMesh(api.url, ['agent', 'publish', file]);
    expect(missing.code, missing.output).toBe(ExitCode.usage);
    expect(missing.output).toContain(`${file}.br cannot be read`);
    await writeFile(`${file}.br`, packed);
    const published = await runMesh(api.url, ['agent', 'publish', file]);
    expect(published.code, published.output).toBe(ExitCode.ok);
    expect(published.output).toMatch(
      /uploading .*mesh-host-1\.4\.0\.br \(0\.0 MiB, the 0\.6 MiB executable compressed\)/,
    );

    await parts.meshService.addNode('web-2', {}, localActor());
    const host = hostApiClient(api.url, signingKeyOf('web-2', await enrolNode(parts, 'web-2')));
    const answer = await host.send('GET', '/hosts/web-2/releases/1.4.0/x64');
    expect(answer.status).toBe(200);
    const { release, download } = answer.body as { release: StoredRelease; download: Transfer };
    const dir = await mkdtemp(join(tmpdir(), 'mesh-host-dir-'));
    expect(
      await installRelease(dir, release, () => downloadStream(download), {
        builtInKeys: [releaseKey.publicKey],
        arch: 'x64',
        now: () => new Date(),
      }),
    ).toEqual({ installed: true, version: '1.4.0' });
    expect(await readFile(releasePath(dir, '1.4.0'))).toEqual(executable);
  });
});

describe('mesh agent upgrade', () => {
  const declarationOf = async (node: string, keys: Awaited<ReturnType<typeof enrolNode>>) => {
    const answer = await hostApiClient(api.url, signingKeyOf(node, keys)).send(
      'GET',
      `/hosts/${node}/declaration`,
    );
    return (answer.body as { declaration?: { agent?: { version: string } } }).declaration;
  };

  it('refuses a version not published before it starts anything', async () => {
    const refused = await runMesh(api.url, ['agent', 'upgrade', '7.7.7', '--json']);
    expect(refused.code, refused.output).toBe(ExitCode.notFound);
    expect(printedJson(refused.stdout)).toMatchObject({ error: { code: 'release_not_found' } });
  });

  it('refuses a version not published for an architecture its hosts report, naming them', async () => {
    // 1.1.0 is published for x64 alone; arm-1's host reports arm64
    await parts.meshService.addNode('arm-1', {}, localActor());
    const heardAt = new Date().toISOString();
    const facts = {
      os: 'debian-12',
      kernel: '6.1.0',
      arch: 'arm64',
      agent: '1.0.0',
      cpus: 2,
      memoryBytes: 2 ** 30,
      bootedAt: '2026-12-01T00:00:00.000Z',
    };
    await parts.reports.recordReport(
      { node: 'arm-1', sentAt: heardAt, sequence: 1, state: 'heartbeat', revision: 0, facts },
      { heardAt, queuedAt: heardAt },
    );
    const refused = await runMesh(api.url, ['agent', 'upgrade', '1.1.0', '--json']);
    expect(refused.code, refused.output).toBe(ExitCode.notFound);
    expect(printedJson(refused.stdout)).toMatchObject({
      error: { code: 'release_not_found', details: { version: '1.1.0', arches: ['arm64'] } },
    });
    expect(refused.output).toContain('1 node report arm64 (arm-1)');

    // The control plane checks it too, from the facts of the rollout's own nodes: a client that
    // asks POST /rollouts itself is refused as the CLI is, and nothing is recorded.
    const { operator } = hostCalls(api.url);
    const asked = await operator('POST', '/rollouts', { agent: '1.1.0', nodes: ['arm-1'], waves: '100%' });
    expect(asked.status, JSON.stringify(asked.body)).toBe(404);
    expect(asked.body).toMatchObject({
      error: {
        code: 'release_not_found',
        details: {
          versions: ['1.1.0'],
          gaps: [{ version: '1.1.0', arch: 'arm64', hosts: 1, nodes: ['arm-1'] }],
        },
      },
    });
    expect((asked.body.error as { message: string }).message).toContain(
      'mesh-host 1.1.0 is not published for arm64 (1 host runs it: arm-1)',
    );
    expect((await operator('GET', '/rollouts')).body.rollouts).toEqual([]);
    await parts.meshService.removeNode('arm-1', true, localActor());
  });

  it('sets the version a wave at a time on the nodes it sends, holds a frozen node as any send, and is audited', async () => {
    const { operator } = hostCalls(api.url);
    const keys = new Map<string, Awaited<ReturnType<typeof enrolNode>>>();
    for (const node of ['up-a', 'up-b', 'up-c']) {
      await parts.meshService.addNode(node, node === 'up-c' ? { tier: 'frozen' } : {}, localActor());
      keys.set(node, await enrolNode(parts, node));
    }
    await operator('POST', '/push', { behind: true });
    await operator('POST', '/freezes', { on: 'tier=frozen', reason: 'hold the agent back', until: '1h' });
    const started = await operator('POST', '/rollouts', {
      agent: '1.1.0',
      nodes: ['up-a', 'up-c', 'up-b'],
      waves: '2,100%',
    });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const id = started.body.id as string;
    // claimed, then wave 1 sent: up-a is sent the version, up-c is held back by the freeze
    for (let step = 0; step < 5 && (await parts.rollouts.read(id)).current < 0; step += 1)
      await parts.rollouts.step(id);
    const { page } = await parts.rollouts.page(id, { wave: 0 }, 100_000);
    expect(page.waves[0]?.nodes).toEqual([
      expect.objectContaining({ node: 'up-a', state: 'waiting' }),
      expect.objectContaining({ node: 'up-c', state: 'held', step: 'held back by freeze tier=frozen' }),
    ]);
    expect((await declarationOf('up-a', keys.get('up-a') as never))?.agent).toEqual({ version: '1.1.0' });
    expect(await declarationOf('up-c', keys.get('up-c') as never)).not.toHaveProperty('agent');
    expect(await declarationOf('up-b', keys.get('up-b') as never)).not.toHaveProperty('agent');
    expect((await parts.rollouts.read(id)).state).toBe('running');
    const audit = await operator('GET', '/audit?action=agent.upgrade');
    expect(audit.body.records).toEqual([
      expect.objectContaining({
        action: 'agent.upgrade',
        target: `rollout:${id}`,
        details: expect.objectContaining({ origin: 'agent', version: '1.1.0', nodes: 3 }),
      }),
    ]);
    await operator('POST', `/rollouts/${id}/abort`, {});
    await operator('DELETE', '/freezes?on=tier%3Dfrozen');
  });

  it('is taken back by mesh rollout undo, each node to the version its host reported, refused while one is not published', async () => {
    const { operator } = hostCalls(api.url);
    const nodes = ['back-a', 'back-b', 'back-c'];
    const keys = new Map<string, Awaited<ReturnType<typeof enrolNode>>>();
    for (const node of nodes) {
      await parts.meshService.addNode(node, {}, localActor());
      keys.set(node, await enrolNode(parts, node));
    }
    // back-a's host runs 1.1.0 (published), back-b's 1.0.0 (not yet); back-c's has said nothing
    for (const [node, agent] of [
      ['back-a', '1.1.0'],
      ['back-b', '1.0.0'],
    ] as const) {
      const heardAt = new Date().toISOString();
      await parts.reports.recordReport(
        {
          node,
          sentAt: heardAt,
          sequence: 1,
          state: 'heartbeat',
          revision: 0,
          facts: {
            os: 'debian-12',
            kernel: '6.1.0',
            arch: 'x64',
            agent,
            cpus: 2,
            memoryBytes: 2 ** 30,
            bootedAt: '2026-12-01T00:00:00.000Z',
          },
        },
        { heardAt, queuedAt: heardAt },
      );
    }
    const publish = async (version: string) => {
      const { file } = await releaseFile(version);
      const published = await runMesh(api.url, ['agent', 'publish', file]);
      expect(published.code, published.output).toBe(ExitCode.ok);
    };
    await publish('2.0.0');
    const unpublished = await operator('POST', '/rollouts', { agent: '9.9.9', nodes, waves: '100%' });
    expect(unpublished.status).toBe(404);
    expect(unpublished.body).toMatchObject({
      error: { code: 'release_not_found', details: { versions: ['9.9.9'] } },
    });

    const started = await operator('POST', '/rollouts', { agent: '2.0.0', nodes, waves: '1,100%' });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const id = started.body.id as string;
    const sendWave = async (rollout: string, wave: number) => {
      for (let step = 0; step < 8 && (await parts.rollouts.read(rollout)).current < wave; step += 1)
        await parts.rollouts.step(rollout);
      expect((await parts.rollouts.read(rollout)).current).toBe(wave);
    };
    await sendWave(id, 0);
    // the first wave's host answers, so the second wave goes
    const sentA = (await parts.rollouts.page(id, { wave: 0 }, 100_000)).page.waves[0]?.nodes?.[0];
    expect(sentA?.node).toBe('back-a');
    const heardAt = new Date().toISOString();
    await parts.reports.recordReport(
      { node: 'back-a', sentAt: heardAt, sequence: 2, state: 'applied', revision: sentA?.revision ?? 0 },
      { heardAt, queuedAt: heardAt },
    );
    await sendWave(id, 1);
    for (const node of nodes)
      expect((await declarationOf(node, keys.get(node) as never))?.agent).toEqual({ version: '2.0.0' });
    expect((await parts.rollouts.read(id)).versionsBefore).toEqual(['1.0.0', '1.1.0']);

    const before = await parts.rollouts.read(id);
    const refused = await operator('POST', `/rollouts/${id}/undo`, {});
    expect(refused.status).toBe(404);
    expect(refused.body).toMatchObject({
      error: { code: 'release_not_found', details: { versions: ['1.0.0'] } },
    });
    expect(await parts.rollouts.read(id)).toEqual(before);

    await publish('1.0.0');
    const asked = await operator('POST', `/rollouts/${id}/undo`, {});
    expect(asked.status, JSON.stringify(asked.body)).toBe(202);
    const undo = asked.body.rollout as string;
    expect((await operator('POST', `/rollouts/${id}/undo`, {})).body.rollout).toBe(undo);
    await sendWave(undo, 0);
    expect((await parts.rollouts.read(id)).state).toBe('undone');
    expect((await parts.rollouts.read(undo)).origin).toEqual({
      kind: 'agent-undo',
      rollout: id,
      version: '2.0.0',
    });
    expect((await declarationOf('back-a', keys.get('back-a') as never))?.agent).toEqual({ version: '1.1.0' });
    // the undo's second wave has not gone: back-b and back-c still run what the upgrade asked
    expect((await declarationOf('back-b', keys.get('back-b') as never))?.agent).toEqual({ version: '2.0.0' });
    const undoneA = (await parts.rollouts.page(undo, { wave: 0 }, 100_000)).page.waves[0]?.nodes?.[0];
    const heardAgain = new Date().toISOString();
    await parts.reports.recordReport(
      { node: 'back-a', sentAt: heardAgain, sequence: 3, state: 'applied', revision: undoneA?.revision ?? 0 },
      { heardAt: heardAgain, queuedAt: heardAgain },
    );
    await sendWave(undo, 1);
    expect((await declarationOf('back-b', keys.get('back-b') as never))?.agent).toEqual({ version: '1.0.0' });
    expect(await declarationOf('back-c', keys.get('back-c') as never)).not.toHaveProperty('agent');
    const audit = await operator('GET', '/audit?action=rollout.undo');
    expect(audit.body.records).toContainEqual(
      expect.objectContaining({ action: 'rollout.undo', target: `rollout:${id}` }),
    );
    await operator('POST', `/rollouts/${undo}/abort`, {});
  });
});
