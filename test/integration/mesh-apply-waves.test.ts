import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { RolloutRecord } from '../../lib/server/core/rollout/record.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

/**
 * `mesh apply -f FILE --push --waves …`: the nodes the apply leaves behind are pushed as a
 * rollout in waves (docs/mesh-file.md, docs/decisions/rollouts-in-waves.md), not all at once.
 */
const file = `version: 1
nodes:
  broker-1:
    modules:
      rabbit: {provides: amqp}
groups:
  web:
    nodes: web-[1-4]
    modules:
      nginx: {consumes: [broker-1/rabbit]}
`;

let api: RunningApi;
let parts: Parts;
let claimer: NodeJS.Timeout | undefined;
const folder = mkdtempSync(join(tmpdir(), 'mesh-apply-waves-'));
const path = join(folder, 'mesh.yaml');
const mesh = (args: string[]) => runMesh(api.url, args);

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('applywaves'));
  api = await startLocalApi({ port: 0, parts });
  writeFileSync(path, file);
  // the driver's claiming steps, and no wave: the answer shows the waves as cut
  claimer = setInterval(() => {
    void (async () => {
      for (const id of await parts.rolloutStore.running())
        if ((await parts.rollouts.read(id)).state === 'claiming') await parts.rollouts.step(id);
    })().catch(() => undefined);
  }, 200);
});

afterAll(async () => {
  clearInterval(claimer);
  await api?.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe('mesh apply --push --waves', () => {
  it('refuses wave options without --push --waves, or with --plan, and writes nothing', async () => {
    const before = await tableContents(parts.config);
    for (const args of [
      ['apply', '-f', path, '--waves', '1,100%'],
      ['apply', '-f', path, '--push', '--max-failures', '1'],
      ['apply', '-f', path, '--push', '--waves', '1,100%', '--plan'],
    ]) {
      const refused = await mesh(args);
      expect(refused.code, refused.output).toBe(ExitCode.usage);
      expect(refused.output).toContain('rolls out the push after the apply');
    }
    expect(await tableContents(parts.config)).toEqual(before);
  }, 120_000);

  it('applies, then starts a rollout of every node left behind in the waves given', async () => {
    const applied = await mesh([
      '--json',
      'apply',
      '-f',
      path,
      '--push',
      '--waves',
      '1,50%,100%',
      '--max-failures',
      '0',
      '--no-wait',
    ]);

    expect(applied.code, applied.output).toBe(ExitCode.ok);
    const [, rollout] = applied.stdout
      .split(/\n(?=\{)/)
      .map((document) => JSON.parse(document) as RolloutRecord);
    expect(rollout?.origin).toEqual({ kind: 'behind' });
    expect(rollout?.state).toBe('running');
    const waved = rollout?.waves.map((wave) => (wave.nodes ?? []).map((n) => n.node)) ?? [];
    expect(waved.map((wave) => wave.length)).toEqual([1, 2, 2]);
    expect(waved.flat().sort()).toEqual(['broker-1', 'web-1', 'web-2', 'web-3', 'web-4']);
    const shown = await mesh(['--json', 'rollout', 'show', rollout?.id ?? '']);
    expect(shown.code, shown.output).toBe(ExitCode.ok);
    expect((JSON.parse(shown.stdout) as RolloutRecord).id).toBe(rollout?.id);
  }, 120_000);
});
