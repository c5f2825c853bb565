import { consumerLines } from '../../lib/server/core/control/log-lines.ts';
import type { FaultRig } from './fault-rig.ts';
import type { Accounting } from './report-ledger.ts';

/** What one fault did to the reports, and what else it showed. */
export type ScenarioResult = Accounting & {
  readonly name: string;
  readonly storeDisagrees: readonly string[];
  /** Messages settled twice: a batch a kill cut short, taken again. */
  readonly settledAgain: number;
  readonly seconds: number;
  readonly notes: string[];
  /** For a killed push: whether `mesh push --behind` run again left nothing behind. */
  readonly converged?: boolean;
  /** For a killed push: how many of the nodes marked behind it had sent when it was killed. */
  readonly sentBeforeKill?: { readonly sent: number; readonly of: number };
};

export type Fault = {
  readonly name: string;
  /** Each apply takes between these many milliseconds, so reports keep coming through the fault. */
  readonly applyMs: readonly [number, number];
  /** Pushes the hosts' nodes before the fault, so their agents apply and report through it. @default true */
  readonly pushFirst?: boolean;
  /** Does the fault and puts things back; answers what it saw. */
  run(rig: FaultRig): Promise<{
    notes: string[];
    converged?: boolean;
    sentBeforeKill?: ScenarioResult['sentBeforeKill'];
  }>;
};

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/**
 * One scenario: the hosts' agents start; their nodes are pushed (so each agent applies, taking a
 * while, and reports applying then applied, besides its heartbeats); the fault; a tail; the agents
 * stop; the queue is left to empty (up to `settleMs`); then every report they made is accounted for.
 */
export async function runScenario(
  rig: FaultRig,
  fault: Fault,
  timing: { readonly leadInMs: number; readonly tailMs: number; readonly settleMs: number },
): Promise<ScenarioResult> {
  const started = Date.now();
  rig.ledger.clear();
  const settledBefore = rig.evidence.settledAgain.size;
  const [least, most] = fault.applyMs;
  rig.startAgents(() => least + Math.random() * (most - least));
  await sleep(timing.leadInMs);
  if (fault.pushFirst ?? true) {
    await rig.markBehind(rig.hosts, `m-${started}`);
    await rig.operator('POST', '/push', { behind: true });
    await sleep(1_000);
  }
  const seen = await fault.run(rig);
  await sleep(timing.tailMs);
  await rig.stopAgents();
  const settledIn = await rig.settle(timing.settleMs);
  const counted = await rig.account();
  return {
    name: fault.name,
    ...counted,
    settledAgain: rig.evidence.settledAgain.size - settledBefore,
    seconds: (Date.now() - started) / 1000,
    notes: [...seen.notes, `queue empty ${(settledIn / 1000).toFixed(0)} s after the hosts stopped`],
    ...(seen.converged !== undefined ? { converged: seen.converged } : {}),
    ...(seen.sentBeforeKill !== undefined ? { sentBeforeKill: seen.sentBeforeKill } : {}),
  };
}

/** A part stopped for `seconds`, then started again on its data; applies spread over the outage. */
const stoppedFor = (
  part: string,
  seconds: number,
  stop: (rig: FaultRig) => Promise<void>,
  start: (rig: FaultRig) => Promise<void>,
): Fault => ({
  name: `${part} stopped ${seconds} s`,
  applyMs: [500, Math.min(40_000, 1_000 + seconds * 600)],
  async run(rig) {
    await stop(rig);
    await sleep(seconds * 1000);
    await start(rig);
    return { notes: [] };
  },
});

/** The store (DynamoDB Local, its own process) stopped for `seconds`. */
export const storeStopped = (seconds: number): Fault =>
  stoppedFor(
    'store',
    seconds,
    (rig) => rig.stopStore(),
    (rig) => rig.startStore(),
  );

/** The queue emulator (fauxqs) stopped for `seconds`. */
export const queueStopped = (seconds: number): Fault =>
  stoppedFor(
    'queue',
    seconds,
    (rig) => rig.stopQueue(),
    (rig) => rig.startQueue(),
  );

/**
 * SIGKILL while `mesh push --behind` is sending (every node given a new module first, host or
 * not, so there is much to send): once some nodes are sent and before all are. Then the control
 * plane is started again and the push run again, which must leave nothing behind.
 */
export const killedMidPush: Fault = {
  name: 'control plane killed mid-push',
  applyMs: [500, 5_000],
  pushFirst: false,
  async run(rig) {
    await rig.markBehind([...rig.hosts, ...rig.loadNodes], `p-${Date.now()}`);
    const total = await rig.markedCount();
    const push = rig.meshRunning('push', '--behind');
    let left = total;
    const deadline = Date.now() + 60_000;
    while (left === total && push.child.exitCode === null && Date.now() < deadline) {
      await sleep(10);
      left = await rig.markedCount();
    }
    await rig.killControlPlane();
    left = await rig.markedCount();
    const cut = await push.exited();
    await rig.startControlPlane();
    const again = await rig.mesh('push', '--behind');
    const outcome = again.json as { behind?: string[]; flushed?: unknown[] } | undefined;
    const status = (await rig.mesh('status')).json as { nodes?: Array<{ behind: boolean }> } | undefined;
    const stillBehind = (status?.nodes ?? []).filter((node) => node.behind).length;
    const converged = again.code === 0 && (outcome?.behind ?? ['?']).length === 0 && stillBehind === 0;
    return {
      converged,
      sentBeforeKill: { sent: total - left, of: total },
      notes: [
        `killed with ${total - left} of ${total} nodes sent (the push exited ${cut.code ?? cut.signal})`,
        `push --behind again: exit ${again.code}, ${outcome?.flushed?.length ?? '?'} flushed, behind [${(outcome?.behind ?? ['?']).join(', ')}]; mesh status: ${stillBehind} behind`,
      ],
    };
  },
};

/**
 * SIGKILL the moment the consumer says it recorded a report: in the middle of its batch, whose
 * records it has settled are not yet deleted. They come back after the queue's visibility
 * timeout and are settled again (as stale: the store has them already).
 */
export const killedMidBatch: Fault = {
  name: 'control plane killed mid-batch',
  applyMs: [500, 5_000],
  async run(rig) {
    await rig.killWhen((said) => said.code === consumerLines.settled.code && said.type === 'report');
    await rig.startControlPlane();
    return { notes: [] };
  },
};
