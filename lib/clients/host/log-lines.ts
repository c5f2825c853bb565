import {
  type CodedLine,
  codedLine,
  type LineFormat,
  printedLine,
  type Said,
  say,
} from '../../server/core/coded-lines.ts';
import type { RevertCause } from '../../server/core/health.ts';

const revertCauseText: Readonly<Record<RevertCause, string>> = {
  failed: 'its apply command failed',
  unhealthy: 'its check did not pass',
  'cut-off': 'the control plane could not be reached after it',
};

/**
 * What `mesh-host run` says as it goes (docs/codes.md); people see each after `mesh-host NODE: `.
 * The run loop and the signal watch say these; `run` prints them.
 */
export const agentLines = {
  running: codedLine<{
    readonly api: string;
    readonly broker: string | null;
    readonly intervalSeconds: number;
    readonly apply: string;
    readonly check?: string | null;
  }>(
    'host.running',
    'info',
    ({ api, broker, intervalSeconds, apply, check }) =>
      `running against ${api}, ${
        broker
          ? `on the signal at ${broker} (polling every ${intervalSeconds} s while it is away)`
          : `asking every ${intervalSeconds} s until the control plane names a broker`
      }, applying with: ${apply}${check ? `, checking with: ${check}` : ''}`,
  ),
  stopping: codedLine<{ readonly signal: string }>(
    'host.stopping',
    'info',
    ({ signal }) => `${signal} received; stopping after the current step`,
  ),
  stopped: codedLine('host.stopped', 'info', () => 'stopped'),
  waitingFirst: codedLine(
    'host.waiting-first',
    'info',
    () => 'waiting for a first declaration: nothing has been pushed to this node yet',
  ),
  upToDate: codedLine<{ readonly revision: number | null }>(
    'host.up-to-date',
    'info',
    ({ revision }) => `up to date at revision ${revision ?? '?'}; waiting for a change`,
  ),
  applying: codedLine<{ readonly revision: number }>(
    'host.applying',
    'info',
    ({ revision }) => `applying revision ${revision}`,
  ),
  applied: codedLine<{ readonly revision: number }>(
    'host.applied',
    'info',
    ({ revision }) => `applied revision ${revision}`,
  ),
  openFailed: codedLine<{ readonly revision: number; readonly reason: string }>(
    'host.open-failed',
    'warn',
    ({ revision, reason }) =>
      `cannot open the secrets of revision ${revision}, the apply command is not run: ${reason}`,
  ),
  applyFailed: codedLine<{ readonly revision: number; readonly reason: string }>(
    'host.apply-failed',
    'warn',
    ({ revision, reason }) => `failed to apply revision ${revision}: ${reason}`,
  ),
  healthy: codedLine<{ readonly revision: number }>(
    'host.healthy',
    'info',
    ({ revision }) => `healthy at revision ${revision}: the check passed`,
  ),
  unhealthy: codedLine<{ readonly revision: number; readonly reason: string }>(
    'host.unhealthy',
    'warn',
    ({ revision, reason }) => `unhealthy at revision ${revision}: ${reason}`,
  ),
  reverting: codedLine<{ readonly from: number; readonly to: number; readonly cause: RevertCause }>(
    'host.reverting',
    'warn',
    ({ from, to, cause }) =>
      `giving up revision ${from} (${revertCauseText[cause]}); applying revision ${to} again, the last applied and healthy`,
  ),
  reverted: codedLine<{ readonly from: number; readonly to: number }>(
    'host.reverted',
    'info',
    ({ from, to }) => `reverted to revision ${to}; revision ${from} is not applied again, a newer one is`,
  ),
  revertFailed: codedLine<{ readonly to: number; readonly reason: string }>(
    'host.revert-failed',
    'error',
    ({ to, reason }) => `could not apply revision ${to} again: ${reason}`,
  ),
  revertNone: codedLine<{ readonly revision: number; readonly cause: RevertCause }>(
    'host.revert-none',
    'warn',
    ({ revision, cause }) =>
      `revision ${revision}: ${revertCauseText[cause]}, and there is no earlier good declaration to go back to`,
  ),
  revertedWaiting: codedLine<{ readonly revision: number; readonly applied: number | null }>(
    'host.reverted-waiting',
    'info',
    ({ revision, applied }) =>
      `revision ${revision} was given up for revision ${applied ?? '?'}; waiting for a newer one`,
  ),
  cutOff: codedLine<{ readonly revision: number; readonly seconds: number }>(
    'host.cut-off',
    'warn',
    ({ revision, seconds }) =>
      `the control plane could not be reached for ${seconds} s after revision ${revision} was applied`,
  ),
  reportWaiting: codedLine<{ readonly state: string; readonly revision: number; readonly reason: string }>(
    'host.report-waiting',
    'warn',
    ({ state, revision, reason }) =>
      `report ${state} of revision ${revision} is waiting to be sent: ${reason}`,
  ),
  sequenceReset: codedLine<{
    readonly sequence: number;
    readonly latestAccepted: number;
    readonly restartedAt: number;
  }>(
    'host.sequence-reset',
    'warn',
    ({ sequence, latestAccepted, restartedAt }) =>
      `report sequence ${sequence} leads the control plane's clock (it takes up to ${latestAccepted}); counting again from this host's clock: ${restartedAt}`,
  ),
  retrying: codedLine<{ readonly seconds: number; readonly reason: string }>(
    'host.retrying',
    'warn',
    ({ seconds, reason }) => `waiting ${seconds.toFixed(1)} s before trying again: ${reason}`,
  ),
  controlPlaneBack: codedLine<{ readonly failures: number }>(
    'host.control-plane-back',
    'info',
    ({ failures }) => `control plane is back after ${failures} failed attempt${failures === 1 ? '' : 's'}`,
  ),
  keyRotated: codedLine(
    'host.key-rotated',
    'info',
    () => 'the control plane took a newer key of this node (a rotation); going on with it',
  ),
  agentInstalled: codedLine<{ readonly version: string; readonly revision: number }>(
    'host.agent-installed',
    'info',
    ({ version, revision }) =>
      `revision ${revision} names agent ${version}: installed it as the trial; stopping for the supervisor to start it`,
  ),
  agentNotInstalled: codedLine<{
    readonly version: string;
    readonly revision: number;
    readonly reason: string;
  }>(
    'host.agent-not-installed',
    'error',
    ({ revision, reason }) => `revision ${revision} given up: ${reason}`,
  ),
  decommissioned: codedLine<{ readonly reason: string }>(
    'host.decommissioned',
    'error',
    ({ reason }) =>
      `the control plane no longer knows this node's key (${reason}): the node was disenrolled or removed from the mesh; stopping. Enrol again with a new token to bring it back`,
  ),
  onSignal: codedLine<{ readonly url: string }>(
    'host.signal.on',
    'info',
    ({ url }) => `on the signal at ${url}: waiting for a change, fetching now to catch up`,
  ),
  brokerBack: codedLine<{ readonly url: string }>(
    'host.signal.back',
    'info',
    ({ url }) => `the broker is back: on the signal again at ${url}, polling stopped`,
  ),
  brokerUnreachable: codedLine<{
    readonly url: string;
    readonly reason: string;
    readonly pollSeconds: number;
  }>(
    'host.signal.unreachable',
    'warn',
    ({ url, reason, pollSeconds }) =>
      `the broker at ${url} cannot be reached (${reason}); polling every ${pollSeconds} s until it is back`,
  ),
  brokerLost: codedLine<{
    readonly reason: string;
    readonly pollSeconds: number;
    readonly reconnectInMs: number;
  }>(
    'host.signal.lost',
    'warn',
    ({ reason, pollSeconds, reconnectInMs }) =>
      `lost the broker (${reason}); reconnecting in ${(reconnectInMs / 1000).toFixed(1)} s (a fleet's reconnects spread over a window), polling every ${pollSeconds} s until it is back`,
  ),
  brokerNamed: codedLine<{ readonly url: string; readonly moved: boolean }>(
    'host.signal.named',
    'info',
    ({ url, moved }) => `the control plane ${moved ? 'moved' : 'named'} the broker: ${url}`,
  ),
  signalled: codedLine<{ readonly revision: number }>(
    'host.signal.revision',
    'info',
    ({ revision }) => `signal: revision ${revision} was sent; fetching it`,
  ),
  signalledRevoked: codedLine(
    'host.signal.revoked',
    'info',
    () => 'signal: this node’s host identity was revoked; asking the control plane',
  ),
} as const;

/** Where the agent's lines go: `mesh-host run` prints them, a bench's agents note when they came. */
export type AgentLog = (said: Said) => void;

/** What `mesh-host`'s commands say besides the run loop: enrol, rotate, a refused command line (docs/codes.md). */
export const commandLines = {
  refusedArguments: codedLine<{ readonly problem: string }>('host.usage', 'error', ({ problem }) => problem),
  warning: codedLine<{ readonly warning: string }>('host.warning', 'warn', ({ warning }) => warning),
  notEnrolled: codedLine<{ readonly dir: string }>(
    'host.not-enrolled',
    'error',
    ({ dir }) => `${dir} holds no enrolment; run mesh-host enrol first`,
  ),
  keys: codedLine<{ readonly created: boolean; readonly dir: string; readonly thumbprint: string }>(
    'host.enrol.keys',
    'info',
    ({ created, dir, thumbprint }) =>
      `${created ? 'generated new node keys' : 'presenting the node keys already'} in ${dir} (key ${thumbprint})`,
  ),
  toldToTryAgain: codedLine<{ readonly reason: string; readonly waitSeconds: number }>(
    'host.enrol.try-again',
    'info',
    ({ reason, waitSeconds }) => `told to try again (${reason}); asking again in ${waitSeconds.toFixed(1)} s`,
  ),
  enrolled: codedLine<{
    readonly node: string;
    readonly enrolledAt: string;
    readonly thumbprint: string;
    readonly dir: string;
  }>(
    'host.enrolled',
    'info',
    ({ node, enrolledAt, thumbprint, dir }) =>
      `enrolled ${node} at ${enrolledAt} (key ${thumbprint}); keys kept in ${dir}`,
  ),
  wait: codedLine<{ readonly reason: string; readonly explained: string }>(
    'host.enrol.wait',
    'warn',
    ({ reason, explained }) => `${explained} (${reason})`,
  ),
  waitSeconds: codedLine<{ readonly waitSeconds: number }>(
    'host.enrol.wait-seconds',
    'info',
    ({ waitSeconds }) => `wait ${waitSeconds} s before running enrol again`,
  ),
  refused: codedLine<{ readonly reason: string; readonly status: number; readonly detail: string }>(
    'host.enrol.refused',
    'error',
    ({ reason, detail }) => `enrolment refused (${reason}): ${detail}`,
  ),
  unreachable: codedLine<{ readonly api: string; readonly reason: string }>(
    'host.unreachable',
    'error',
    ({ api, reason }) => `the control plane at ${api} could not be reached (${reason})`,
  ),
  rotated: codedLine<{ readonly node: string; readonly previous: string; readonly thumbprint: string }>(
    'host.rotated',
    'info',
    ({ node, previous, thumbprint }) =>
      `rotated ${node}'s keys: key ${previous} replaced by ${thumbprint}, which the control plane takes now; the old key is refused`,
  ),
  rotationFinished: codedLine<{ readonly node: string; readonly thumbprint: string; readonly dir: string }>(
    'host.rotate.finished',
    'info',
    ({ node, thumbprint, dir }) =>
      `finished an earlier rotation of ${node}'s keys: the control plane had switched to key ${thumbprint}; it is now the key in ${dir}`,
  ),
  rotationUnknownKey: codedLine<{ readonly node: string; readonly reason: string }>(
    'host.rotate.unknown-key',
    'error',
    ({ node, reason }) =>
      `the control plane no longer knows node ${node}'s key (${reason}): the node was disenrolled or removed; enrol again with a new token`,
  ),
  rotationRefused: codedLine<{ readonly reason: string; readonly status: number; readonly detail: string }>(
    'host.rotate.refused',
    'error',
    ({ reason, detail }) => `rotation refused (${reason}): ${detail}`,
  ),
  rotationUnfinished: codedLine<{ readonly reason: string; readonly pending: string }>(
    'host.rotate.unfinished',
    'error',
    ({ reason, pending }) =>
      `${reason}; the new keys wait in ${pending}: run mesh-host rotate again to finish (a running agent finishes it too, should the control plane have switched already)`,
  ),
} as const;

/** Prints a host line on `stream`: `prefix` and the text for people, or one JSON line. */
export function hostPrinter(format: LineFormat) {
  return <Fields extends object>(
    stream: NodeJS.WritableStream,
    prefix: string,
    line: CodedLine<Fields>,
    fields: Fields,
  ): void => {
    stream.write(printedLine(say(line, fields), format, prefix));
  };
}
