/**
 * Exit codes of `mesh` and `mesh-host`, part of the product (documented in the README).
 * HTTP answers become exit codes here and nowhere else.
 */
export const ExitCode = {
  ok: 0,
  /** Something unexpected; the message says what. */
  failed: 1,
  /** The command line or its input is invalid (HTTP 400/413/422). */
  usage: 2,
  /** A named node, module or token does not exist (HTTP 404). */
  notFound: 3,
  /** The control plane refused: a conflict, a duplicate, a rule broken (other 4xx). */
  refused: 4,
  /** `mesh push`: the round bound was reached and some nodes are still behind. */
  stillBehind: 5,
  /** The control plane could not be reached, or answered "try again" / 5xx. */
  unavailable: 6,
  /** `mesh-host enrol`: patience ran out while told "try again" (token held, store away); wait, then run enrol again. */
  waitThenRetry: 7,
  /** `mesh-host enrol`: the token was refused (unknown, expired, revoked, spent by another key). */
  enrolRefused: 8,
  /**
   * `mesh-host run`: this node was removed or disenrolled, so the control plane no longer knows
   * its key. Restarting cannot mend that: the systemd unit does not restart on it.
   */
  decommissioned: 9,
  // 10 is `mesh diff`'s "something unexpected" (README)
  /** `mesh push|upgrade --waves`, `mesh rollout resume`: the rollout halted (failures past --max-failures); `mesh rollout show ID` says why. */
  rolloutHalted: 11,
  /** The rollout paused between waves (`--pause`): `mesh rollout resume ID` sends the next. */
  rolloutPaused: 12,
  /** The rollout was aborted: nothing more is sent, the nodes not sent stay behind. */
  rolloutAborted: 13,
  /** `mesh audit verify`: a record of the audit trail was removed, altered, reordered or hidden (named). */
  auditBroken: 14,
  /**
   * `mesh push NODE`: the node named is held back by a rollout or a freeze and was not sent
   * (docs/decisions/held-back.md); the output names who holds it and what releases it.
   */
  heldBack: 15,
  /** `mesh rollout show|resume`, a followed rollout: it was taken back by an undo rollout (its reason names it). */
  rolloutUndone: 16,
  /** `mesh wait`: its --timeout passed before what it waits for happened; nothing was changed. */
  waitTimedOut: 17,
  /** `mesh wait node`: the node's host reported the revision it was sent failed, or unhealthy. */
  waitFailed: 18,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export function exitCodeForStatus(status: number): ExitCode {
  if (status < 400) return ExitCode.ok;
  if (status === 400 || status === 413 || status === 422) return ExitCode.usage;
  if (status === 404) return ExitCode.notFound;
  if (status === 429 || status >= 500) return ExitCode.unavailable;
  return ExitCode.refused;
}
