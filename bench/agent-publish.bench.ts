import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../lib/clients/http/api-client.ts';
import { downloadFile, uploadFile } from '../lib/clients/http/release-transfer.ts';
import { startLocalApi } from '../lib/local/http-server.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import type { Transfer } from '../lib/server/core/agent-release/ports.ts';
import { newReleaseKey, signRelease } from '../lib/server/core/agent-release/release.ts';
import { benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

/** The size of today's x64 executable (docs/host-agent.md, "Packages"). */
const executableBytes = 122 * 1024 * 1024;

/**
 * `mesh agent publish` of a 122 MiB executable on the local runtime, and a host's download of it:
 * the time of each step, and how far the process's resident memory rose above where it started
 * while the control plane (in this process) streamed the upload to its data folder and the
 * download back. Streaming holds it to a few buffers at a time; a body read whole would hold the
 * executable's size, on each side.
 */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  const work = await mkdtemp(join(tmpdir(), 'bench-agent-publish-'));
  const key = newReleaseKey();
  try {
    const config = await environment.provision('bench-publish', {
      releaseKeys: [key.publicKey],
      releaseFolder: join(work, 'releases'),
    });
    const parts = localPartsFor(config);
    const api = await startLocalApi({ port: 0, parts, releaseFiles: parts.localReleaseFiles });
    const client = new ApiClient(api.url);
    const file = join(work, 'mesh-host');
    const hash = createHash('sha256');
    const out = createWriteStream(file);
    const chunk = randomBytes(1024 * 1024);
    for (let written = 0; written < executableBytes; written += chunk.length) {
      hash.update(chunk);
      if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve) => out.end(resolve));
    const release = signRelease(
      { version: '9.9.9', arch: 'x64', bytes: executableBytes, sha256: hash.digest('hex') },
      key.privateKeyPem,
    );

    (globalThis as { gc?: () => void }).gc?.();
    const base = process.memoryUsage();
    let peak = base.rss;
    let buffers = base.arrayBuffers;
    // With --expose-gc each sample is taken after a collection: what is held, not garbage.
    const collect = (globalThis as { gc?: () => void }).gc;
    const sampler = setInterval(
      () => {
        collect?.();
        const now = process.memoryUsage();
        peak = Math.max(peak, now.rss);
        buffers = Math.max(buffers, now.arrayBuffers);
      },
      collect ? 250 : 20,
    );
    const timed = async <T>(work: () => Promise<T>) => {
      const started = performance.now();
      const value = await work();
      return { value, ms: performance.now() - started };
    };
    const asked = await timed(() => client.call<{ upload: Transfer }>('POST', '/agent/releases', release));
    const uploaded = await timed(() => uploadFile(asked.value.upload, file));
    const published = await timed(() => client.call('POST', '/agent/releases', release));
    const { download } = await parts.agentReleases.forHost('9.9.9', 'x64');
    const downloaded = await timed(() => downloadFile(download, join(work, 'downloaded'), executableBytes));
    clearInterval(sampler);
    await api.stop();
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    const rate = (ms: number) => `${(executableBytes / 1024 / 1024 / (ms / 1000)).toFixed(0)} MiB/s`;
    return [
      {
        title: `mesh agent publish of a ${mib(executableBytes)} MiB executable, local runtime`,
        columns: ['step', 'ms', 'rate'],
        rows: [
          ['ask (signature checked, upload granted)', Math.round(asked.ms), ''],
          ['upload, streamed to the data folder and hashed', Math.round(uploaded.ms), rate(uploaded.ms)],
          ['ask again (checked, stored, audited)', Math.round(published.ms), ''],
          ['a host’s download, hashed', Math.round(downloaded.ms), rate(downloaded.ms)],
        ],
        notes: [
          `resident memory rose at most ${mib(peak - base.rss)} MiB above the ${mib(base.rss)} MiB it started at, Buffers at most ${mib(buffers - base.arrayBuffers)} MiB above theirs (sampled ${collect ? 'every 250 ms, each after a collection' : 'every 20 ms'}${collect ? '' : '; garbage not yet collected counts: NODE_OPTIONS=--expose-gc samples after a collection'})`,
        ],
      },
    ];
  } finally {
    await rm(work, { recursive: true, force: true });
    await environment.stop();
  }
}
