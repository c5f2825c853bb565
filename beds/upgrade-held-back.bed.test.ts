import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import type { Holder } from '../lib/server/core/hold/held-back.ts';
import type { PushOutcome } from '../lib/server/core/push/ports.ts';
import type { RolloutRecord } from '../lib/server/core/rollout/record.ts';
import { printedJsonDocuments } from '../test/support/processes.ts';
import {
  addAndEnrol,
  appliedAsSent,
  appliedVersion,
  type Bed,
  eventually,
  expectOk,
  inBed,
  status,
} from './support/bed.ts';

const workers = ['worker-01', 'worker-02', 'worker-03', 'worker-04'];
const heldBack = workers.slice(1);
const failedOn = (bed: Bed, node: string) => {
  const log = join(bed.recordDir(node), 'failed.log');
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
};
/** What each node was last sent, by revision: a node held back keeps its revision. */
const sentRevisions = async (bed: Bed, nodes: readonly string[]) => {
  const seen = await status(bed);
  return nodes.map((node) => seen.get(node)?.sentRevision ?? null);
};
const versionsOf = (bed: Bed, nodes: readonly string[]) =>
  nodes.map((node) => appliedVersion(bed, node, 'worker'));

/**
 * A halted rollout is a brake (docs/decisions/held-back.md). Four hosts whose hook refuses
 * `worker 2.0.0`, and an unrelated `db-1`: the upgrade in waves halts in wave 1 (worker-01); then
 * a push of db-1, `mesh push --behind`, the enrolment of an unrelated host and `mesh apply --push`
 * each leave worker-02..04 unsent and name them with the rollout holding them; `mesh rollout
 * undo` brings worker-01 back to 1.0.0; a second bad upgrade halted and aborted lets nothing out.
 */
it('a halted upgrade holds back the nodes it did not send, through every kind of push; undo takes it back', () =>
  inBed('upgrade-held-back', async (bed) => {
    await bed.startControlPlane();
    for (const node of workers) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'worker'), `assign ${node} worker`);
      writeFileSync(join(bed.recordDir(node), 'fail-on'), 'worker=2.0.0\n');
      bed.startHost(node);
    }
    await addAndEnrol(bed, 'db-1');
    await expectOk(bed.mesh('assign', 'db-1', 'db'), 'assign db-1 db');
    bed.startHost('db-1');
    await expectOk(bed.mesh('upgrade', 'worker', '1.0.0'), 'mesh upgrade worker 1.0.0');
    await eventually('every worker at 1.0.0', () =>
      versionsOf(bed, workers).every((v) => v === '1.0.0') ? true : undefined,
    );
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await appliedAsSent(bed, [...workers, 'db-1']);

    // the upgrade halts in its first wave: worker-01's hook refuses 2.0.0
    const bad = await bed.mesh('upgrade', 'worker', '2.0.0', '--waves', '1,100%', '--max-failures', '0');
    expect({ exit: bad.code, output: bad.output }).toMatchObject({ exit: ExitCode.rolloutHalted });
    const halted = bad.json as RolloutRecord;
    expect(halted.waves[0]?.nodes).toEqual([expect.objectContaining({ node: 'worker-01', state: 'failed' })]);
    const before = await sentRevisions(bed, heldBack);
    const heldBy = `rollout:${halted.id}`;
    const stillHeld = async (what: string) => {
      expect({ what, sent: await sentRevisions(bed, heldBack) }).toEqual({ what, sent: before });
      expect({ what, versions: versionsOf(bed, heldBack) }).toEqual({
        what,
        versions: heldBack.map(() => '1.0.0'),
      });
    };
    const namesThem = (what: string, result: { json: unknown; output: string }, pushed = result.json) => {
      const holders = (pushed as PushOutcome).holders ?? [];
      expect({ what, holders }).toMatchObject({
        what,
        holders: [{ by: heldBy, state: 'halted', notSent: 3, some: heldBack } satisfies Partial<Holder>],
      });
      expect(result.output).toContain(`held back by rollout ${halted.id}, not sent: ${heldBack.join(', ')}`);
      expect(result.output).toContain(`mesh rollout resume ${halted.id}`);
    };

    // worker-02 is given a module more: behind, and still held back; db-1 is given one too
    await expectOk(bed.mesh('assign', 'worker-02', 'sidecar'), 'assign worker-02 sidecar');
    await expectOk(bed.mesh('assign', 'db-1', 'metrics'), 'assign db-1 metrics');
    // a push of an unrelated node: db-1 is sent, the held-back workers are not, worker-02 among them
    const named = await expectOk(bed.mesh('push', 'db-1'), 'mesh push db-1');
    expect((named.json as PushOutcome).pushed?.node).toBe('db-1');
    expect((named.json as PushOutcome).heldBack).toEqual([{ node: 'worker-02', by: heldBy }]);
    namesThem('mesh push db-1', named);
    await stillHeld('mesh push db-1');

    const behind = await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    expect((behind.json as PushOutcome).heldBack).toEqual([{ node: 'worker-02', by: heldBy }]);
    namesThem('mesh push --behind', behind);
    await stillHeld('mesh push --behind');

    // an unrelated host enrols: its enrolment's flush leaves them alone too
    await addAndEnrol(bed, 'extra');
    await expectOk(bed.mesh('assign', 'extra', 'tools'), 'assign extra tools');
    bed.startHost('extra');
    await expectOk(bed.mesh('push', 'extra'), 'mesh push extra');
    await appliedAsSent(bed, ['extra', 'db-1']);
    await stillHeld('the enrolment of extra');

    // the mesh as a file, applied with a label and a module more on db-1, and pushed
    const exported = await expectOk(bed.mesh('export', '--format', 'json'), 'mesh export');
    type FileNode = { labels?: Record<string, string>; modules?: Record<string, object> };
    const file = exported.json as { nodes: Record<string, FileNode> };
    const db = file.nodes['db-1'] ?? {};
    file.nodes['db-1'] = { ...db, labels: { role: 'db' }, modules: { ...db.modules, cache: {} } };
    const path = join(bed.recordDir('db-1'), 'mesh.json');
    writeFileSync(path, JSON.stringify(file));
    const applied = await expectOk(bed.mesh('apply', '-f', path, '--push'), 'mesh apply --push');
    // its result is the apply's, then the push's: the second document on stdout
    const pushedByApply = printedJsonDocuments(applied.output).at(-1) as PushOutcome;
    namesThem('mesh apply --push', applied, pushedByApply);
    await stillHeld('mesh apply --push');

    const shown = await bed.meshText('rollout', 'show', halted.id);
    expect(shown.output).toContain('not sent: held back while the rollout is halted');
    expect(shown.output).toContain('3 nodes in waves not sent are held back');
    const summary = await expectOk(bed.meshText('status', '--summary'), 'mesh status --summary');
    expect(summary.output).toContain(`rollout ${halted.id} (halted) holds back 3 nodes it has not sent`);
    expect(summary.output).not.toContain('behind; mesh push --behind');

    // undo: worker-01 is sent 1.0.0 again, in the rollout's own wave, and applies it
    const undo = await expectOk(bed.mesh('rollout', 'undo', halted.id), `mesh rollout undo ${halted.id}`);
    expect((undo.json as RolloutRecord).state).toBe('done');
    await eventually('worker-01 back at 1.0.0', () =>
      appliedVersion(bed, 'worker-01', 'worker') === '1.0.0' ? true : undefined,
    );
    const undone = await bed.meshText('rollout', 'show', halted.id);
    expect(undone.code).toBe(ExitCode.rolloutUndone);
    expect(undone.output).toContain(`undone by rollout ${(undo.json as RolloutRecord).id}`);
    await stillHeld('the undo');
    expect(failedOn(bed, 'worker-02')).toEqual([]);

    // halted again and aborted: the abort lets nothing out, and a push sends none of them 2.0.0
    const again = await bed.mesh('upgrade', 'worker', '2.0.0', '--waves', '1,100%', '--max-failures', '0');
    expect(again.code).toBe(ExitCode.rolloutHalted);
    const second = again.json as RolloutRecord;
    await expectOk(bed.mesh('rollout', 'abort', second.id), `mesh rollout abort ${second.id}`);
    const afterAbort = await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind after the abort');
    expect((afterAbort.json as PushOutcome).holders ?? []).toEqual([]);
    // released with the abort, worker-02 gets its sidecar, still at worker 1.0.0
    expect((afterAbort.json as PushOutcome).flushed.map((f) => f.node)).toContain('worker-02');
    await appliedAsSent(bed, heldBack);
    expect(versionsOf(bed, heldBack)).toEqual(heldBack.map(() => '1.0.0'));
    expect(heldBack.flatMap((node) => failedOn(bed, node))).toEqual([]);
  }));
