import type { Actor } from '../audit/record.ts';
import { logLine, say } from '../coded-lines.ts';
import { isTransientFault } from '../faults.ts';
import { MeshError, MeshRaceError } from '../mesh/errors.ts';
import type { ModuleVersions } from '../mesh/ports.ts';
import type { Log } from '../ports.ts';
import type { PushFlow } from '../push/ports.ts';
import { RolloutError } from '../rollout/errors.ts';
import type { RolloutDriver } from '../rollout/ports.ts';
import { optionsOf } from '../rollout/requests.ts';
import type { Rollouts } from '../rollout/service.ts';
import type { RolloutOptions } from '../rollout/waves.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { checkBuildTimes, checkReportSequence } from './bounds.ts';
import { MessageRejectedError, PushFailedError, PushTimeoutError } from './errors.ts';
import { consumerLines } from './log-lines.ts';
import {
  type BuildMessage,
  type CatchUpMessage,
  type ControlMessage,
  type EnrolledMessage,
  envelope,
  type ReportMessage,
  type UpgradeMessage,
} from './messages.ts';
import type { BuildStore, ControlSender, ReportStore, SealingFollowUp } from './ports.ts';

export type SettleDeps = {
  readonly reports: ReportStore;
  readonly builds: BuildStore;
  readonly moduleVersions: ModuleVersions;
  readonly pushFlow: PushFlow;
  readonly sender: ControlSender;
  readonly log: Log;
  readonly now: () => Date;
  /** A push that has not answered by then is treated as timed out: logged, not held. */
  readonly pushTimeoutMs: number;
  /**
   * The invocation's time left (Lambda's getRemainingTimeInMillis): an upgrade moves carriers
   * until what is left is its push's time and a margin, and sends the rest as a follow-up.
   * Absent, an upgrade moves every carrier in one pass.
   */
  readonly remainingMs?: () => number;
  /** Where an upgrade in waves starts its rollout instead of pushing --behind (docs/decisions/rollouts-in-waves.md). */
  readonly rollouts?: Pick<Rollouts, 'start' | 'startUndo'>;
  readonly rolloutDriver?: RolloutDriver;
  /** What a node's new (or revoked) keys ask of the mesh before the push that delivers it. */
  readonly sealing?: SealingFollowUp;
};

/**
 * Does what one well-formed message asks. Returns a note on success; throws a ControlError
 * (or a store's own error) otherwise, which lib/server/core/control/outcome.ts turns into a queue outcome.
 * Every branch can be asked again and leaves the same state: reports are "newer wins", builds
 * are kept once, upgrades set a version and push (which converges), catch-up re-announces.
 */
export async function settleMessage(
  message: ControlMessage,
  messageId: string,
  deps: SettleDeps,
): Promise<string> {
  switch (message.type) {
    case 'report':
      return settleReport(message, deps);
    case 'build':
      return settleBuild(message, messageId, deps);
    case 'upgrade':
      return settleUpgrade(message, messageId, deps);
    case 'catch-up':
      return settleCatchUp(message, messageId, deps);
    case 'enrolled':
      return settleEnrolled(message, deps);
  }
}

async function settleReport(message: ReportMessage, deps: SettleDeps) {
  const now = deps.now();
  checkReportSequence(message.body, now);
  await deps.reports.recordReport(
    message.body,
    { heardAt: now.toISOString(), queuedAt: new Date(message.sentAt).toISOString() },
    message.by,
  );
  const { sequence, state, revision, health, revert } = message.body;
  const healthNote = health ? `, ${health.state}` : '';
  const revertNote = revert ? `, reverted to revision ${revert.to}${revert.ok ? '' : ' (failed)'}` : '';
  return `recorded report ${sequence} (${state}, revision ${revision}${healthNote}${revertNote})`;
}

/**
 * Who a queued request's audit record names: the operator its route saw, carried on the message;
 * a message that names none is the control plane's own.
 */
const askerOf = (message: { readonly by?: Actor }, messageId: string): Actor =>
  message.by ?? { principal: 'control-plane', source: 'control-queue', requestId: messageId };

async function settleBuild(message: BuildMessage, messageId: string, deps: SettleDeps) {
  const now = deps.now();
  const receivedAt = new Date(message.sentAt);
  checkBuildTimes(message.body, receivedAt, now);
  const { id, module, version, result } = message.body;
  const recording = await deps.builds.recordBuild(
    message.body,
    { receivedAt: receivedAt.toISOString(), recordedAt: now.toISOString() },
    askerOf(message, messageId),
  );
  switch (recording) {
    case 'recorded':
      return `recorded build ${id} (${module} ${version}, ${result})`;
    case 'repeat':
      return `build ${id} was already recorded; the repeat is ignored`;
    case 'retracted':
      return `kept build ${id}, but ${module} ${version} is retracted: it is never announced`;
  }
}

/** Time an upgrade keeps back from moving carriers beside its push's: settling, sending a follow-up, answering. */
export const upgradeMarginMs = 3_000;

async function settleUpgrade(message: UpgradeMessage, messageId: string, deps: SettleDeps) {
  const { module, version } = message.body;
  let carriers: readonly string[];
  let previous: string | null;
  let more: boolean;
  let next: string | undefined;
  let overtaken: boolean | undefined;
  const remaining = deps.remainingMs?.();
  try {
    // in waves, each wave moves its own carriers: none is behind on the version before its wave
    ({ carriers, previous, more, next, overtaken } = await deps.moduleVersions.setModuleVersion(
      module,
      version,
      askerOf(message, messageId),
      {
        carriers: message.body.rollout === undefined,
        ...(remaining === undefined
          ? {}
          : { until: deps.now().getTime() + remaining - deps.pushTimeoutMs - upgradeMarginMs }),
        ...(message.body.continues ? { continues: true } : {}),
        ...(message.body.after !== undefined ? { after: message.body.after } : {}),
      },
    ));
  } catch (error) {
    if (storeCouldNotTakeIt(error))
      throw new StoreUnavailableError(`setting ${module} to ${version}`, { cause: error });
    // An unknown module (or another refusal of the mesh's own) is refused the same way every
    // time: to the dead-letter queue at once. What nobody foresaw is held, under the bound.
    if (error instanceof MeshError)
      throw new MessageRejectedError(`setting ${module} to ${version}: ${error.message}`, { cause: error });
    throw error;
  }
  if (overtaken)
    return `left the rest of ${module} ${version}'s carriers: the module is at ${previous ?? 'no version'} now, whose upgrade moves them`;
  // A pass stops at a round's end, so it can overrun its time by a round: a push that would no
  // longer fit the invocation is left to the follow-up, which finds no carrier to move.
  const pushFits =
    remaining === undefined || (deps.remainingMs?.() ?? 0) >= deps.pushTimeoutMs + upgradeMarginMs;
  if (more || (!pushFits && message.body.rollout === undefined)) {
    // The rest in a message of its own, after this one in the module's group: this one is
    // settled within its invocation, never left to come back after its visibility timeout.
    await deps.sender.send([
      {
        message: envelope(
          'upgrade',
          { module, version, continues: true, ...(more && next !== undefined ? { after: next } : {}) },
          deps.now(),
          askerOf(message, messageId),
        ),
        deduplicationId: `continues-${messageId}`.slice(0, 128),
      },
    ]);
    return `set ${module} to ${version}: moved what fit this pass (${carriers.length} carriers walked${next === undefined ? '' : ` up to ${next}`}); the rest, and the push, follow in the next message`;
  }
  if (message.body.rollout?.undoes) return startUndoRollout(message, deps);
  if (message.body.rollout) return startUpgradeRollout(message, carriers, previous, deps);
  // The version is in the store: from here on nothing holds the upgrade. A push that fails or
  // times out is logged; the nodes stay behind and the next push (or catch-up) flushes them.
  try {
    const outcome = await withTimeout(
      deps.pushFlow.push({ behind: true }, { requestedBy: `upgrade ${module}` }),
      deps.pushTimeoutMs,
    );
    const still = outcome.behind.length > 0 ? `; still behind: ${outcome.behind.join(', ')}` : '';
    return `set ${module} to ${version} (carried by ${carriers.length} nodes), pushed ${outcome.flushed.length} in ${outcome.rounds} rounds${still}`;
  } catch (error) {
    const failed = new PushFailedError(module, { cause: error });
    logLine(
      deps.log,
      say(consumerLines.upgradePushFailed, { module, version, carriers, reason: failed.message }),
    );
    throw failed;
  }
}

/**
 * The carriers in waves: the rollout is recorded under the id the message names (so a redelivery
 * finds it, and starts nothing twice), then the driver sends its first wave. Options that cannot
 * be read were refused when the upgrade was asked; here they are refused to the dead letters.
 */
async function startUpgradeRollout(
  message: UpgradeMessage,
  carriers: readonly string[],
  previous: string | null,
  deps: SettleDeps,
) {
  const { module, version, rollout } = message.body;
  if (!rollout || !deps.rollouts)
    throw new MessageRejectedError(`upgrade ${module} in waves: no rollouts here`);
  if (carriers.length === 0) return `set ${module} to ${version}: no node carries it, nothing to roll out`;
  let options: RolloutOptions;
  try {
    options = optionsOf(rollout);
  } catch (error) {
    throw new MessageRejectedError(`upgrade ${module} in waves: ${(error as Error).message}`, {
      cause: error,
    });
  }
  // The start records the rollout claiming and answers at once: a rollout that meets another's
  // nodes while claiming ends refused, named in mesh rollout list, and holds nothing.
  const record = await deps.rollouts.start({
    id: rollout.id,
    origin: { kind: 'upgrade', module, version, from: previous },
    nodes: [...carriers].sort(),
    options,
    by: message.by ?? { principal: `upgrade ${module}`, source: 'control-plane', requestId: rollout.id },
  });
  await deps.rolloutDriver?.started(record);
  return `set ${module} to ${version} (carried by ${carriers.length} nodes), rollout ${record.id} in ${record.waves.length} waves`;
}

/**
 * An undo (docs/decisions/held-back.md): the version is set back on every carrier already (so the
 * nodes the rollout never sent are no longer behind); its rollout goes over the nodes the rollout
 * sent, in its waves, taking over their claims. A rollout that sent nothing is undone at once.
 */
async function startUndoRollout(message: UpgradeMessage, deps: SettleDeps) {
  const { module, version, rollout } = message.body;
  if (!rollout?.undoes || !deps.rollouts)
    throw new MessageRejectedError(`undo of ${module}: no rollouts here`);
  let options: RolloutOptions;
  try {
    options = optionsOf(rollout);
  } catch (error) {
    throw new MessageRejectedError(`undo of ${module}: ${(error as Error).message}`, { cause: error });
  }
  let record: Awaited<ReturnType<Rollouts['startUndo']>>;
  try {
    record = await deps.rollouts.startUndo({
      id: rollout.id,
      undoes: rollout.undoes,
      module,
      version,
      options,
      by: message.by ?? {
        principal: `undo ${rollout.undoes}`,
        source: 'control-plane',
        requestId: rollout.id,
      },
    });
  } catch (error) {
    if (error instanceof RolloutError)
      throw new MessageRejectedError(`undo of ${rollout.undoes}: ${error.message}`, { cause: error });
    throw error;
  }
  if (!record)
    return `set ${module} back to ${version}: rollout ${rollout.undoes} had sent nothing, it is undone`;
  await deps.rolloutDriver?.started(record);
  return `set ${module} back to ${version}, rollout ${record.id} takes rollout ${rollout.undoes} back in ${record.waves.length} waves`;
}

/** A race lost counts as the store failing: it is tried again too. */
function storeCouldNotTakeIt(error: unknown): boolean {
  return error instanceof StoreUnavailableError || error instanceof MeshRaceError || isTransientFault(error);
}

async function settleCatchUp(message: CatchUpMessage, messageId: string, deps: SettleDeps) {
  const latest = await deps.builds.latestSuccessfulBuilds();
  // Each upgrade it announces names who asked for the catch-up, so its record does.
  const announcements = latest.map((build) => ({
    message: envelope(
      'upgrade',
      { module: build.module, version: build.version },
      deps.now(),
      askerOf(message, messageId),
    ),
    // The same catch-up tried again within SQS's five-minute window announces nothing twice.
    deduplicationId: `catch-up-${messageId}-${build.module}`.slice(0, 128),
  }));
  if (announcements.length > 0) await deps.sender.send(announcements);
  return `re-announced ${announcements.length} modules' latest successful builds${
    announcements.length > 0
      ? `: ${latest.map((build) => `${build.module} ${build.version} (${build.id})`).join(', ')}`
      : ''
  }`;
}

/**
 * A node's keys changed: its relations and those of its providers' consumers are marked (minted
 * again to its key, or withdrawn while it has none), then one push of the node delivers both
 * sides of each, with no operator action. A push that fails or times out is logged: the nodes
 * stay marked, and the next push flushes them.
 */
async function settleEnrolled(message: EnrolledMessage, deps: SettleDeps) {
  const { node } = message.body;
  if (!deps.sealing) throw new MessageRejectedError(`enrolment of ${node}: nothing here follows keys`);
  let followed: Awaited<ReturnType<SealingFollowUp['followKeys']>>;
  try {
    followed = await deps.sealing.followKeys(node);
  } catch (error) {
    if (storeCouldNotTakeIt(error))
      throw new StoreUnavailableError(`following ${node}'s keys`, { cause: error });
    throw error;
  }
  if (!followed) return `enrolment of ${node}: the node is gone, nothing to mint`;
  // A node with no relation either way has nothing sealed to it: its first push is the operator's.
  if (followed.marked.length === 0) return `enrolment of ${node}: no relation to mint or withdraw`;
  const did = followed.enrolled
    ? `marked ${followed.marked.length} nodes to mint ${node}'s relations to its key`
    : `withdrew ${followed.withdrawn} provisions of ${node}, which has no enrolment`;
  try {
    const outcome = await withTimeout(
      deps.pushFlow.push({ node }, { requestedBy: `enrolment of ${node}` }),
      deps.pushTimeoutMs,
    );
    const still = outcome.behind.length > 0 ? `; still behind: ${outcome.behind.join(', ')}` : '';
    return `${did}; pushed ${node} and ${outcome.flushed.length} more in ${outcome.rounds} rounds${still}`;
  } catch (error) {
    const failed = new PushFailedError(`enrolment of ${node}`, { cause: error });
    logLine(deps.log, say(consumerLines.enrolledPushFailed, { node, reason: failed.message }));
    return `${did}; the push failed (${failed.message}): the nodes stay behind for the next push`;
  }
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PushTimeoutError(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
