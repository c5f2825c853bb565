import { describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { canonicalJson } from '../../lib/server/core/canonical.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { ModuleNotFoundError } from '../../lib/server/core/mesh/errors.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

function mesh() {
  const store = new MemoryMeshStore();
  const service = new MeshService({ store, removals: store });
  const flow = new LocalPushFlow({ tasks: pushTaskFunctions(new Pusher({ store: store })) });
  const sent = (node: string) => JSON.parse(store.deliveries.get(node) ?? 'null') as Declaration | null;
  return { store, service, flow, sent };
}

describe('push, through the real ASL: one push leaves the mesh consistent', () => {
  it('one push of a cross-node consumer delivers the grant to the provider, named as flushed', async () => {
    // Prepare
    const { service, flow, sent } = mesh();
    await service.addNode('broker-host', {}, localActor());
    await service.addNode('app-host', {}, localActor());
    await service.assign('broker-host', 'rabbit', 'amqp', localActor());
    await service.assign('app-host', 'shop', null, localActor());
    await flow.push({ behind: true });
    await service.consume(
      { node: 'app-host', module: 'shop' },
      { node: 'broker-host', module: 'rabbit' },
      localActor(),
    );

    // Act
    const outcome = await flow.push({ node: 'app-host' });

    // Assess
    expect(outcome.pushed).toEqual({ node: 'app-host', revision: 2 });
    expect(outcome.flushed).toEqual([{ node: 'broker-host', revision: 2, round: 1 }]);
    expect(outcome.behind).toEqual([]);
    expect(outcome.rounds).toBe(1);
    const provider = sent('broker-host');
    const consumer = sent('app-host');
    expect(provider?.grants).toHaveLength(1);
    expect(provider?.grants[0]?.consumer).toEqual({ node: 'app-host', module: 'shop' });
    expect(consumer?.provisions[0]?.provider).toEqual({
      node: 'broker-host',
      module: 'rabbit',
      kind: 'amqp',
    });
    expect(consumer?.provisions[0]?.fingerprint).toBe(provider?.grants[0]?.fingerprint);
  });

  it('a same-node consumer gets its provision and the grant in one declaration', async () => {
    const { service, flow, sent } = mesh();
    await service.addNode('solo', {}, localActor());
    await service.assign('solo', 'db', 'postgres', localActor());
    await service.assign('solo', 'api', null, localActor());
    await service.consume({ node: 'solo', module: 'api' }, { node: 'solo', module: 'db' }, localActor());

    const outcome = await flow.push({ node: 'solo' });

    expect(outcome).toEqual({ pushed: { node: 'solo', revision: 1 }, flushed: [], rounds: 0, behind: [] });
    expect(sent('solo')?.grants).toHaveLength(1);
    expect(sent('solo')?.provisions).toHaveLength(1);
  });

  it('composing again reuses the provision: a second push sends nothing new', async () => {
    const { service, flow, sent } = mesh();
    await service.addNode('p', {}, localActor());
    await service.addNode('c', {}, localActor());
    await service.assign('p', 'mq', 'amqp', localActor());
    await service.assign('c', 'app', null, localActor());
    await service.consume({ node: 'c', module: 'app' }, { node: 'p', module: 'mq' }, localActor());
    await flow.push({ node: 'c' });
    const first = sent('c');

    const again = await flow.push({ behind: true, full: true });

    expect(again).toEqual({ pushed: null, flushed: [], rounds: 1, behind: [] });
    expect(sent('c')).toEqual(first);
  });

  it('an upgrade makes its carriers behind, and push --behind flushes exactly them', async () => {
    const { service, flow, store } = mesh();
    for (const node of ['a', 'b', 'c']) await service.addNode(node, {}, localActor());
    await service.assign('a', 'web', null, localActor());
    await service.assign('b', 'web', null, localActor());
    await service.assign('c', 'cron', null, localActor());
    await flow.push({ behind: true });

    const { carriers } = await store.setModuleVersion('web', '2.0');
    const outcome = await flow.push({ behind: true });

    expect([...carriers].sort()).toEqual(['a', 'b']);
    expect(outcome.flushed.map((f) => f.node).sort()).toEqual(['a', 'b']);
    expect(outcome.flushed.every((f) => f.revision === 2 && f.round === 1)).toBe(true);
  });

  it('names exactly what is still behind when the bound is reached', async () => {
    // Prepare: a chain whose flush mints again (n1 -> n2/mq, n2 -> n3/db)
    const { service, flow } = mesh();
    for (const node of ['n1', 'n2', 'n3']) await service.addNode(node, {}, localActor());
    await service.assign('n3', 'db', 'postgres', localActor());
    await service.assign('n2', 'mq', 'amqp', localActor());
    await service.assign('n2', 'app', null, localActor());
    await service.assign('n1', 'web', null, localActor());
    await flow.push({ behind: true });
    await service.consume({ node: 'n2', module: 'app' }, { node: 'n3', module: 'db' }, localActor());
    await service.consume({ node: 'n1', module: 'web' }, { node: 'n2', module: 'mq' }, localActor());

    // Act
    const bounded = await flow.push({ node: 'n1', maxRounds: 1 });
    const rest = await flow.push({ behind: true });

    // Assess
    expect(bounded.rounds).toBe(1);
    expect(bounded.flushed).toEqual([{ node: 'n2', revision: 2, round: 1 }]);
    expect(bounded.behind).toEqual(['n3']);
    expect(rest).toEqual({
      pushed: null,
      flushed: [{ node: 'n3', revision: 2, round: 1 }],
      rounds: 1,
      behind: [],
    });
  });
});

describe('provisions', () => {
  it('two consumers whose names join alike still get distinct provision names', async () => {
    // Prepare: with `-` as the joint, a-b/c and a/b-c would both be a-b-c
    const { service, flow, sent } = mesh();
    for (const node of ['p', 'a-b', 'a']) await service.addNode(node, {}, localActor());
    await service.assign('p', 'mq', 'amqp', localActor());
    await service.assign('a-b', 'c', null, localActor());
    await service.assign('a', 'b-c', null, localActor());
    await service.consume({ node: 'a-b', module: 'c' }, { node: 'p', module: 'mq' }, localActor());
    await service.consume({ node: 'a', module: 'b-c' }, { node: 'p', module: 'mq' }, localActor());

    // Act
    await flow.push({ behind: true });

    // Assess
    const grants = sent('p')?.grants ?? [];
    expect(grants.map((g) => [g.resource, g.user]).sort()).toEqual([
      ['a-b_c', 'a-b_c'],
      ['a_b-c', 'a_b-c'],
    ]);
  });
});

describe('upgrades', () => {
  it('refuses an upgrade of a module no node carries, and records nothing', async () => {
    const { service, store } = mesh();
    await service.addNode('n', {}, localActor());

    const upgrade = store.setModuleVersion('ghost', '1.0');

    await expect(upgrade).rejects.toBeInstanceOf(ModuleNotFoundError);
    expect(store.modules.has('ghost')).toBe(false);
    await service.assign('n', 'ghost', 'amqp', localActor());
    expect(store.modules.get('ghost')).toEqual({ module: 'ghost', version: null, provides: 'amqp' });
  });
});

describe('canonical JSON', () => {
  it('does not depend on key order or undefined fields', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, { z: 1, y: 2 }] } })).toBe(
      canonicalJson({ a: { c: [2, { y: 2, z: 1 }] }, b: 1 }),
    );
  });
});
