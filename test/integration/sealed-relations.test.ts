import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { envelope } from '../../lib/server/core/control/messages.ts';
import { settleMessage } from '../../lib/server/core/control/settle.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode, enrolNode, openedBy, relate, secretsOf } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('sealed');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

const declarationOf = async (node: string) =>
  (await parts.deliveries.readDelivery(node))?.declaration as Declaration | undefined;

/** The control queue's consumer taking `enrolled:<node>`, as it would off the queue. */
const enrolled = (node: string) => settleMessage(envelope('enrolled', { node }), `m-${node}`, parts.consumer);

describe('a relation waits for both sides to enrol, then is minted and delivered with no push typed', () => {
  it('is minted when the provider enrols, opens on both hosts, and is withdrawn from both when one disenrols', async () => {
    const web = await addEnrolledNode(parts, 'web');
    // Nothing is sealed to a node with no relation: its first push stays the operator's.
    expect(await enrolled('web')).toBe('enrolment of web: no relation to mint or withdraw');
    expect(await declarationOf('web')).toBeUndefined();
    await parts.meshService.addNode('broker', {}, localActor());
    await relate(parts, { node: 'web', module: 'app' }, { node: 'broker', module: 'mq', kind: 'amqp' });
    await parts.pushFlow.push({ node: 'web' });
    expect((await declarationOf('web'))?.waiting).toEqual([
      { module: 'app', provider: { node: 'broker', module: 'mq', kind: 'amqp' }, waitingFor: ['broker'] },
    ]);

    const broker = await enrolNode(parts, 'broker');
    expect(await enrolled('broker')).toMatch(/marked 1 nodes .*; pushed broker and \d+ more/);

    const [webSecret] = secretsOf(await openedBy(parts, 'web', web));
    const [brokerSecret] = secretsOf(await openedBy(parts, 'broker', broker));
    expect(webSecret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(brokerSecret).toBe(webSecret);
    expect((await declarationOf('web'))?.waiting).toEqual([]);
    // the stored items and the deliveries hold the sealed copies and the fingerprint, never the secret
    const stored = JSON.stringify([
      await parts.pushStore.readNode('web'),
      await parts.pushStore.readNode('broker'),
      await declarationOf('web'),
      await declarationOf('broker'),
    ]);
    expect(stored).not.toContain(webSecret);
    expect(stored).toContain((await declarationOf('web'))?.provisions[0]?.fingerprint);

    await parts.hostIdentities.disenrol('web', localActor());
    expect(await enrolled('web')).toMatch(/withdrew 1 provisions of web/);
    expect((await declarationOf('broker'))?.grants).toEqual([]);
    expect((await declarationOf('web'))?.waiting).toEqual([
      { module: 'app', provider: { node: 'broker', module: 'mq', kind: 'amqp' }, waitingFor: ['web'] },
    ]);
  });

  it('a node enrolled again is sealed to its new key: the old key opens nothing minted after', async () => {
    const oldKeys = await addEnrolledNode(parts, 'db');
    const app = await addEnrolledNode(parts, 'api');
    await relate(parts, { node: 'api', module: 'svc' }, { node: 'db', module: 'pg', kind: 'sql' });
    await parts.pushFlow.push({ node: 'api' });
    const [before] = secretsOf(await openedBy(parts, 'db', oldKeys));

    const newKeys = await enrolNode(parts, 'db');
    await enrolled('db');

    const [after] = secretsOf(await openedBy(parts, 'db', newKeys));
    expect(after).not.toBe(before);
    expect(secretsOf(await openedBy(parts, 'api', app))).toEqual([after]);
    expect(await openedBy(parts, 'db', oldKeys)).toMatchObject({ ok: false });
  });
});
