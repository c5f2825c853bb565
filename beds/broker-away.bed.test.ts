import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { agentLines } from '../lib/clients/host/log-lines.ts';
import { signalLines } from '../lib/server/core/signal/log-lines.ts';
import { addAndEnrol, type Bed, eventually, expectOk, inBed, status } from './support/bed.ts';
import { bedLines } from './support/bed-lines.ts';

const appliedRevisions = (bed: Bed, node: string) => {
  const log = join(bed.recordDir(node), 'applied.log');
  return existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number) : [];
};
const hosts = ['web-1', 'web-2'];

/** Pushes every node behind and waits until each host applied what it was sent. */
async function pushAndApply(bed: Bed, what: string) {
  const push = await expectOk(bed.mesh('push', '--behind'), `mesh push --behind (${what})`);
  const sent = new Map(
    (push.json as { flushed: Array<{ node: string; revision: number }> }).flushed.map((f) => [
      f.node,
      f.revision,
    ]),
  );
  expect([...sent.keys()].sort()).toEqual(hosts);
  await eventually(`both hosts to apply ${what}`, () =>
    hosts.every((node) => appliedRevisions(bed, node).includes(sent.get(node) as number)) ? true : undefined,
  );
}

/**
 * The broker goes away (an IoT outage, a network that drops MQTT): hosts say so and fall back to
 * polling, a push still reaches them, `mesh status` shows them offline; when the broker is back
 * they return to the signal on their own, are online again, and the next push reaches them on
 * the signal.
 */
it('hosts fall back to polling while the broker is away, still apply a push, and return to the signal', () =>
  inBed('broker-away', async (bed) => {
    const brokerOff = join(bed.dir, 'broker-off');
    await bed.startControlPlane({ BED_BROKER_OFF: brokerOff }, 'beds/support/switchable-broker.ts');
    const controlPlane = bed.process('control-plane');
    for (const node of hosts) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'app'), `assign ${node} app`);
    }
    const running = hosts.map((node) => bed.startHost(node, { interval: 2 }));
    await Promise.all(running.map((host) => host.waitForCode(agentLines.onSignal)));
    await pushAndApply(bed, 'the first declaration, on the signal');
    await eventually('both hosts online', async () => {
      const seen = await status(bed);
      return hosts.every((node) => seen.get(node)?.online === true) ? true : undefined;
    });

    writeFileSync(brokerOff, 'off\n');
    await controlPlane.waitForCode(bedLines.brokerStopped);
    await Promise.all(
      running.map((host) =>
        host.waitForCode(agentLines.brokerLost, { where: (lost) => lost.pollSeconds === 2 }),
      ),
    );
    const offline = await eventually('both hosts offline', async () => {
      const seen = await status(bed);
      return hosts.every((node) => seen.get(node)?.online === false) ? seen : undefined;
    });
    for (const node of hosts) await expectOk(bed.mesh('assign', node, 'cache'), `assign ${node} cache`);
    await pushAndApply(bed, 'a push while the broker is away, by polling');
    expect(controlPlane.heard().some((said) => said.code === signalLines.notPublished.code)).toBe(true);

    rmSync(brokerOff);
    await controlPlane.waitForCode(bedLines.brokerStarted);
    await Promise.all(running.map((host) => host.waitForCode(agentLines.brokerBack, { timeoutMs: 45_000 })));
    await eventually('both hosts online again', async () => {
      const seen = await status(bed);
      return hosts.every((node) => seen.get(node)?.online === true) ? true : undefined;
    });
    for (const node of hosts) await expectOk(bed.mesh('assign', node, 'metrics'), `assign ${node} metrics`);
    await pushAndApply(bed, 'a push on the signal again');

    for (const [index, node] of hosts.entries()) {
      const signalled =
        running[index]?.heard().filter((said) => said.code === agentLines.signalled.code) ?? [];
      expect(signalled.length, node).toBeGreaterThanOrEqual(2);
      expect(offline.get(node)?.lastHeard, node).not.toBeNull();
    }
  }));
