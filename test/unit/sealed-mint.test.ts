import { type CryptoKey, exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { SealedDeclarationOpener } from '../../lib/clients/host/agent/declaration-opener.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import type { SealingKey } from '../../lib/server/core/mesh/model.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { sealingKeyOf } from '../../lib/server/core/sealing/sealed-secret.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

type Host = { readonly key: SealingKey; readonly privateKey: CryptoKey };

async function hostKeys(): Promise<Host> {
  const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  return { key: sealingKeyOf(await exportJWK(pair.publicKey)) as SealingKey, privateKey: pair.privateKey };
}

/** web consumes broker/mq; neither enrolled until the test says so. */
async function mesh() {
  const store = new MemoryMeshStore({ enrolEveryNode: false });
  const service = new MeshService({ store, removals: store });
  const secrets: string[] = [];
  const pusher = new Pusher({
    store,
    mint: {
      secret: () => {
        secrets.push(`secret-${secrets.length}-${'x'.repeat(24)}`);
        return secrets.at(-1) as string;
      },
    },
  });
  for (const node of ['broker', 'web']) await service.addNode(node, {}, localActor());
  await service.assign('broker', 'mq', 'amqp', localActor());
  await service.assign('web', 'app', null, localActor());
  await service.consume({ node: 'web', module: 'app' }, { node: 'broker', module: 'mq' }, localActor());
  const sent = (node: string) => JSON.parse(store.deliveries.get(node) ?? 'null') as Declaration;
  const opened = async (node: string, host: Host) => {
    const answer = await new SealedDeclarationOpener(node, () => host.privateKey).open(
      store.deliveries.get(node) ?? '',
    );
    if (!answer.ok) return answer;
    return { ok: true, declaration: JSON.parse(answer.body) as Record<string, Array<{ secret: string }>> };
  };
  return { store, service, pusher, secrets, sent, opened };
}

describe('a provision is sealed at mint to both enrolled keys', () => {
  it('waits, named, while a side has no enrolment; minted when both have', async () => {
    const { store, pusher, sent } = await mesh();
    const web = await hostKeys();
    store.setSealingKey('web', web.key);

    await pusher.sendNode('web');
    expect(sent('web').provisions).toEqual([]);
    expect(sent('web').waiting).toEqual([
      { module: 'app', provider: { node: 'broker', module: 'mq', kind: 'amqp' }, waitingFor: ['broker'] },
    ]);

    store.setSealingKey('broker', (await hostKeys()).key);
    const resent = await pusher.sendNode('web');
    expect(resent).toMatchObject({ sent: true, marked: ['broker'] });
    expect(sent('web').waiting).toEqual([]);
    expect(sent('web').provisions).toHaveLength(1);
  });

  it('each host opens its own copy to the one secret, and nothing sent or stored holds it', async () => {
    const { store, pusher, secrets, sent, opened } = await mesh();
    const [broker, web] = [await hostKeys(), await hostKeys()];
    store.setSealingKey('broker', broker.key);
    store.setSealingKey('web', web.key);

    await pusher.sendNode('web');
    await pusher.sendNode('broker');

    const [secret] = secrets;
    const asWeb = await opened('web', web);
    const asBroker = await opened('broker', broker);
    expect(asWeb.ok && asWeb.declaration.provisions?.[0]?.secret).toBe(secret);
    expect(asBroker.ok && asBroker.declaration.grants?.[0]?.secret).toBe(secret);
    expect(sent('web').provisions[0]?.fingerprint).toBe(sent('broker').grants[0]?.fingerprint);
    const everything = JSON.stringify([...store.deliveries, ...store.nodes], (_, value) =>
      value instanceof Map ? [...value] : value,
    );
    expect(everything).not.toContain(secret);
    // one host cannot open the other's copy
    expect(await opened('web', broker)).toMatchObject({ ok: false });
  });

  it('a key that changes is a new secret on both sides; the provider waits for it, never dropping the grant', async () => {
    const { store, pusher, secrets, sent, opened } = await mesh();
    const [broker, web] = [await hostKeys(), await hostKeys()];
    store.setSealingKey('broker', broker.key);
    store.setSealingKey('web', web.key);
    await pusher.sendNode('web');
    await pusher.sendNode('broker');
    const before = sent('broker').grants[0];

    const rotated = await hostKeys();
    store.setSealingKey('broker', rotated.key);
    const held = await pusher.sendNode('broker');
    expect(held).toMatchObject({ sent: false, pairs: ['web'] });
    expect(held.held).toEqual([
      { module: 'mq', consumer: { node: 'web', module: 'app' }, reason: 'sealed to an older key' },
    ]);
    expect(sent('broker').grants[0]).toEqual(before);

    await pusher.sendNode('web');
    expect(await pusher.sendNode('broker')).toMatchObject({ sent: true });
    const [, second] = secrets;
    expect(second).toBeDefined();
    const asBroker = await opened('broker', rotated);
    expect(asBroker.ok && asBroker.declaration.grants?.[0]?.secret).toBe(second);
    const asWeb = await opened('web', web);
    expect(asWeb.ok && asWeb.declaration.provisions?.[0]?.secret).toBe(second);
    // the old key opens nothing minted after
    expect(await opened('broker', broker)).toMatchObject({ ok: false });
  });

  it('mesh rotate asks a new secret: one push of the consumer mints it and delivers both sides', async () => {
    const { store, service, pusher, secrets, sent } = await mesh();
    store.setSealingKey('broker', (await hostKeys()).key);
    store.setSealingKey('web', (await hostKeys()).key);
    await pusher.sendNode('web');
    await pusher.sendNode('broker');
    const first = sent('web').provisions[0]?.generation;

    await service.rotate({ node: 'web', module: 'app' }, { node: 'broker', module: 'mq' }, localActor());
    expect(await pusher.sendNode('broker')).toMatchObject({ sent: false });
    await pusher.sendNode('web');
    await pusher.sendNode('broker');

    expect(secrets).toHaveLength(2);
    expect(sent('web').provisions[0]?.generation).not.toBe(first);
    expect(sent('broker').grants[0]?.generation).toBe(sent('web').provisions[0]?.generation);
  });
});
