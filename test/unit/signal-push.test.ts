import { describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { deliveryEtag } from '../../lib/server/core/mesh/declaration.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { SignalAnnouncer } from '../../lib/server/core/signal/announce.ts';
import type { NodeSignal } from '../../lib/server/core/signal/channel.ts';
import type { SignalPublisher } from '../../lib/server/core/signal/ports.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

/** A broker as the push sees it: records what it was given, or fails every publish while told to. */
class RecordingPublisher implements SignalPublisher {
  readonly published: Array<{ node: string } & NodeSignal> = [];
  failWith: Error | undefined;
  async publish(node: string, signal: NodeSignal): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.published.push({ node, ...signal });
  }
}

function mesh() {
  const store = new MemoryMeshStore();
  const publisher = new RecordingPublisher();
  const log = new RecordingLog();
  let failures = 0;
  const announcer = new SignalAnnouncer({ publisher, log, countFailure: () => (failures += 1) });
  const pusher = new Pusher({ store, announce: (node, signal) => announcer.announce(node, signal) });
  const flow = new LocalPushFlow({ tasks: pushTaskFunctions(pusher) });
  return {
    store,
    service: new MeshService({ store, removals: store }),
    flow,
    publisher,
    log,
    failures: () => failures,
  };
}

describe('the signal after a send', () => {
  it('tells each node it sent, with the revision and the ETag its host will fetch, and nobody else', async () => {
    const { service, flow, publisher, store } = mesh();
    await service.addNode('broker-host', {}, localActor());
    await service.addNode('app-host', {}, localActor());
    await service.addNode('idle', {}, localActor());
    await service.assign('broker-host', 'rabbit', 'amqp', localActor());
    await service.assign('app-host', 'shop', null, localActor());
    await flow.push({ behind: true });
    publisher.published.length = 0;
    await service.consume(
      { node: 'app-host', module: 'shop' },
      { node: 'broker-host', module: 'rabbit' },
      localActor(),
    );

    await flow.push({ node: 'app-host' });

    const etagOf = async (node: string) => {
      const snapshot = await store.readNode(node);
      return deliveryEtag(snapshot?.sent?.digest as string, snapshot?.sent?.revision as number);
    };
    expect(publisher.published).toEqual([
      { node: 'app-host', revision: 2, etag: await etagOf('app-host') },
      { node: 'broker-host', revision: 2, etag: await etagOf('broker-host') },
    ]);
  });

  it('never fails or repeats a push when the broker is away: the failure is logged and counted', async () => {
    const { service, flow, publisher, log, failures } = mesh();
    await service.addNode('web-1', {}, localActor());
    await service.addNode('web-2', {}, localActor());
    publisher.failWith = new Error('the broker is away');

    const outcome = await flow.push({ behind: true });

    expect(outcome.flushed.map((sent) => sent.node).sort()).toEqual(['web-1', 'web-2']);
    expect(outcome.behind).toEqual([]);
    expect(failures()).toBe(2);
    expect(log.lines.filter((line) => line.level === 'warn').map((line) => line.message)).toEqual([
      expect.stringMatching(/^the signal of web-1 for revision 1 was not published/),
      expect.stringMatching(/^the signal of web-2 for revision 1 was not published/),
    ]);
  });
});
