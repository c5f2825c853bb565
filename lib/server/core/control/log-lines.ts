import { codedLine } from '../coded-lines.ts';

/** A message's type and subject, and for a report its node and sequence: what each line is about. */
export type About = {
  readonly type: string;
  readonly subject: string;
  readonly node?: string;
  readonly sequence?: number;
  readonly state?: string;
};

type HeldOrLost = About & { readonly seconds: number; readonly reason: string };

/**
 * What the control queue's consumer logs about each message (docs/codes.md), the message id
 * beside it: the fault rig reads these to account for every report.
 */
export const consumerLines = {
  malformed: codedLine<{ readonly group: string; readonly reason: string }>(
    'control.malformed',
    'warn',
    ({ group, reason }) => `malformed ${group}: ${reason}`,
  ),
  setAside: codedLine<About & { readonly newer: string }>(
    'control.set-aside',
    'info',
    ({ type, subject, newer }) => `${type} ${subject}: set aside by newer ${newer}`,
  ),
  settled: codedLine<About & { readonly note: string }>(
    'control.settled',
    'info',
    ({ type, subject, note }) => `${type} ${subject}: ${note}`,
  ),
  superseded: codedLine<About & { readonly note: string }>(
    'control.superseded',
    'info',
    ({ type, subject, note }) => `${type} ${subject}: ${note}`,
  ),
  failed: codedLine<About & { readonly reason: string }>(
    'control.failed',
    'warn',
    ({ type, subject, reason }) => `${type} ${subject}: ${reason}`,
  ),
  held: codedLine<HeldOrLost>(
    'control.held',
    'info',
    ({ type, subject, seconds, reason }) => `held ${type} ${subject} for ${seconds} s: ${reason}`,
  ),
  heldNotCopied: codedLine<HeldOrLost>(
    'control.held-not-copied',
    'warn',
    ({ type, subject, seconds, reason }) => `held ${type} ${subject} for ${seconds} s: ${reason}`,
  ),
  lost: codedLine<HeldOrLost>(
    'control.lost',
    'error',
    ({ type, subject, seconds, reason }) => `lost ${type} ${subject} after ${seconds} s: ${reason}`,
  ),
  notDeadLettered: codedLine<{ readonly messageId: string }>(
    'control.not-dead-lettered',
    'error',
    ({ messageId }) => `could not dead-letter ${messageId}`,
  ),
  deadLetterNotNoted: codedLine<{ readonly messageId: string }>(
    'control.letter-not-noted',
    'warn',
    ({ messageId }) => `could not note ${messageId} in the dead-letter list`,
  ),
  visibilityKept: codedLine<{ readonly messageId: string }>(
    'control.visibility-kept',
    'warn',
    ({ messageId }) => `could not shorten the visibility of ${messageId}`,
  ),
  upgradePushFailed: codedLine<{
    readonly module: string;
    readonly version: string;
    readonly carriers: readonly string[];
    readonly reason: string;
  }>('control.upgrade-push-failed', 'warn', ({ reason }) => reason),
  enrolledPushFailed: codedLine<{ readonly node: string; readonly reason: string }>(
    'control.enrolled-push-failed',
    'warn',
    ({ reason }) => reason,
  ),
} as const;
