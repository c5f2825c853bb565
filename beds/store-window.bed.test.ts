import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { expect, it } from 'vitest';
import { commandLines } from '../lib/clients/host/log-lines.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { consumerLines } from '../lib/server/core/control/log-lines.ts';
import { addAndEnrol, eventually, expectOk, inBed, issueTokenFile, status } from './support/bed.ts';

const root = join(import.meta.dirname, '..');

/**
 * Holding messages and claimed-not-spent tokens (docs/decisions/): the store goes away while
 * control-node's report is on the way and a second machine enrols into the gap. The report is
 * held (not lost, not blocking), the enrolment is answered "try again" (not refused, not
 * half-done); when the store is back both complete on their own, the mesh holds exactly the
 * keys the second machine generated, and that machine then applies what it is pushed and is
 * heard from.
 */
it('a report held and an enrolment told to try again while the store is away both complete when it is back', () =>
  inBed('store-window', async (bed) => {
    await bed.startStore();
    await bed.startControlPlane();
    const controlPlane = bed.process('control-plane');
    await addAndEnrol(bed, 'control-node');
    await expectOk(bed.mesh('assign', 'control-node', 'slow-step'), 'assign control-node');
    await expectOk(bed.mesh('node', 'add', 'second'), 'mesh node add second');
    const tokenFile = await issueTokenFile(bed, 'second');
    bed.startHost('control-node', { applyDelayMs: 6_000 });

    const push = await expectOk(bed.mesh('push', 'control-node'), 'mesh push control-node');
    const revision = (push.json as { pushed: { revision: number } }).pushed.revision;
    await eventually('control-node to report that it is applying', async () =>
      (await status(bed)).get('control-node')?.reportState === 'applying' ? true : undefined,
    );

    await bed.stopStore();
    const enrol = bed.spawn(
      'mesh-host enrol second',
      [
        join(root, 'bin/mesh-host.ts'),
        'enrol',
        '--api',
        bed.apiUrl,
        '--node',
        'second',
        '--token-file',
        tokenFile,
        '--dir',
        bed.hostDir('second'),
        // Past the default 35 s: the store's JVM, started again on a loaded machine, took longer
        // than that to answer, and the enrol is to complete on its own once it does.
        '--patience',
        '300',
      ],
      { ...process.env, MESH_LOG_FORMAT: 'json' },
    );
    await enrol.waitForCode(commandLines.toldToTryAgain, { timeoutMs: 20_000 });
    await controlPlane.waitForCode(consumerLines.held, {
      where: (held) => held.type === 'report' && held.node === 'control-node',
      timeoutMs: 30_000,
    });
    expect(enrol.child.exitCode).toBeNull();

    await bed.startStore();

    expect((await enrol.exited()).code).toBe(0);
    rmSync(tokenFile);
    await eventually(
      'control-node’s held report to be recorded',
      async () => {
        const node = (await status(bed)).get('control-node');
        return node?.reportState === 'applied' && node.appliedRevision === revision ? true : undefined;
      },
      60_000,
    );
    // The consumer is done with the held report: it recorded it, or, when the store took a write
    // whose answer came too late (a loaded machine), found it recorded when it came back.
    await eventually(
      'the consumer to be done with control-node’s held report',
      () =>
        controlPlane
          .heard()
          .find(
            (said) =>
              said.type === 'report' &&
              said.state === 'applied' &&
              (said.code === consumerLines.settled.code || said.code === consumerLines.superseded.code),
          ),
      60_000,
    );
    const reports = controlPlane.heard().filter((said) => said.type === 'report');
    expect(reports.filter((said) => said.code === consumerLines.lost.code)).toEqual([]);

    const generated = JSON.parse(readFileSync(join(bed.hostDir('second'), 'signing.jwk'), 'utf8')) as {
      x: string;
    };
    const store = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: bed.storeEndpoint });
    const keys = await store.send(
      new QueryCommand({
        TableName: bed.tableName('identity'),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
        ExpressionAttributeValues: { ':pk': { S: 'node#second' }, ':key': { S: 'key#' } },
      }),
    );
    store.destroy();
    const signingKeys = (keys.Items ?? []).map((item) => item.signingKey?.M?.x?.S);
    expect(signingKeys).toEqual([generated.x]);

    await expectOk(bed.mesh('assign', 'second', 'worker'), 'assign second');
    bed.startHost('second');
    const secondPush = await expectOk(bed.mesh('push', 'second'), 'mesh push second');
    const secondRevision = (secondPush.json as { pushed: { revision: number } }).pushed.revision;
    const heard = await eventually('the second machine to apply what it was pushed', async () => {
      const node = (await status(bed)).get('second');
      return node?.enrolled && node.appliedRevision === secondRevision ? node : undefined;
    });
    expect(heard.lastHeard).not.toBeNull();
    expect(existsSync(join(bed.recordDir('second'), `applied-${secondRevision}.json`))).toBe(true);
  }));
