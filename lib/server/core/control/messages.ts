import * as z from 'zod';
import type { Actor } from '../audit/record.ts';
import { reportedHealth, reportedOutput, revertCauses } from '../health.ts';
import { hostFacts } from '../mesh/host-facts.ts';
import { meshLimits } from '../mesh/limits.ts';
import { buildId, moduleName, moduleVersion, nodeName } from '../names.ts';
import { waveFields } from '../rollout/requests.ts';
import { rolloutIdPattern } from '../rollout/service.ts';

/**
 * What travels on the control queue: one envelope {type, subject, sentAt, body}. The subject is
 * the FIFO MessageGroupId, so everything about one node's reports, one build, one module's
 * upgrades or the catch-up is taken in order and held under its own subject.
 */

/** Larger bodies are malformed: no control message needs more, and SQS itself stops at 256 KiB. */
export const maxMessageBytes = 64 * 1024;

const reportStates = ['applying', 'applied', 'failed', 'heartbeat'] as const;
export const buildResults = ['succeeded', 'failed'] as const;

const isoTime = z.iso.datetime({ offset: true });

/** A declaration's modules, each with its version (null for none), as a host names them. */
const reportModules = z
  .record(moduleName, moduleVersion.nullable())
  .refine((modules) => Object.keys(modules).length <= meshLimits.modulesPerNode, {
    message: `at most ${meshLimits.modulesPerNode} modules, as a node holds`,
  });

/**
 * A host that gave up the revision it reports `failed` and applied again the last revision that
 * was applied and healthy (`mesh-host run --revert-on-failure`, `--revert-after-cutoff`).
 */
const reportedRevert = z.strictObject({
  /** The revision applied again. */
  to: z.number().int().nonnegative(),
  cause: z.enum(revertCauses),
  /** Whether applying it again succeeded; when not, the host runs neither for sure. */
  ok: z.boolean(),
  /** The modules of the revision applied again, as `modules` names the failed one's. */
  modules: reportModules.optional(),
});

/** A report's fields; `reportBody` adds the rules between them. */
export const reportFields = z.strictObject({
  node: nodeName,
  /** The host's own per-node counter; it only grows, so the highest one is what the node is doing now. */
  sequence: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  state: z.enum(reportStates),
  revision: z.number().int().nonnegative(),
  step: z.string().min(1).max(200).optional(),
  /**
   * With `applied` and `failed`: the modules of the declaration the host applied or failed to
   * apply, each with its version (null for none), so the summary counts nodes per module version.
   */
  modules: reportModules.optional(),
  /** The node's health as its host sees it now (lib/server/core/health.ts); absent from hosts before health. */
  health: reportedHealth.optional(),
  /** The ends of the apply command's and the check's outputs, secrets redacted; 4 KiB in all. */
  output: reportedOutput.optional(),
  /** With `failed` only: the host went back to its last good revision. */
  revert: reportedRevert.optional(),
  /**
   * What the machine is (lib/server/core/mesh/host-facts.ts): a host says it in its first report after
   * it starts and whenever it changes; absent from hosts before facts.
   */
  facts: hostFacts.optional(),
  sentAt: isoTime,
});

/**
 * The rules between a report's fields, for the queue's body and the host route's request alike
 * (a refined schema cannot be narrowed, so each adds them to its own fields).
 */
export function withReportRules<
  Shape extends z.ZodType<
    Pick<z.infer<typeof reportFields>, 'state' | 'revision' | 'revert' | 'health' | 'output'>
  >,
>(fields: Shape) {
  return fields
    .refine((report) => report.output === undefined || report.health !== undefined, {
      message: 'output goes with health: the host says both of what it runs',
      path: ['output'],
    })
    .refine((report) => report.revert === undefined || report.state === 'failed', {
      message: 'revert goes with a failed report only',
      path: ['revert'],
    })
    .refine((report) => report.revert === undefined || report.revert.to !== report.revision, {
      message: 'revert.to names the revision applied again, not the one given up',
      path: ['revert', 'to'],
    });
}

export const reportBody = withReportRules(reportFields);

export const buildBody = z.strictObject({
  id: buildId,
  module: moduleName,
  version: moduleVersion,
  result: z.enum(buildResults),
  finishedAt: isoTime,
});

/** An upgrade in waves (`mesh upgrade --waves`) names the rollout it starts, so a redelivery starts it once. */
const upgradeRollout = z.strictObject({
  id: z.string().regex(rolloutIdPattern),
  ...waveFields,
  /** An undo (`mesh rollout undo`): the rollout it takes back; its waves are that one's (docs/decisions/held-back.md). */
  undoes: z.string().regex(rolloutIdPattern).optional(),
});
const upgradeBody = z.strictObject({
  module: moduleName,
  version: moduleVersion,
  rollout: upgradeRollout.optional(),
  /**
   * The rest of an upgrade whose carriers did not all fit one invocation (the consumer sends it
   * itself): moves the carriers left while the module is still at the version, never sets it.
   */
  continues: z.literal(true).optional(),
  /** The rest goes on after this carrier, so each pass reads only the carriers it walks. */
  after: nodeName.optional(),
});

const catchUpBody = z.strictObject({});

/**
 * A node's enrolled keys changed (an enrolment completed, its keys rotated, it was disenrolled):
 * its relations are minted again to its keys, or withdrawn while it has none, and pushed.
 */
const enrolledBody = z.strictObject({ node: nodeName });

export type ReportBody = z.infer<typeof reportBody>;
export type BuildBody = z.infer<typeof buildBody>;
export type UpgradeBody = z.infer<typeof upgradeBody>;
export type CatchUpBody = z.infer<typeof catchUpBody>;
export type EnrolledBody = z.infer<typeof enrolledBody>;

const subjectOf = {
  report: (body: Pick<ReportBody, 'node'>) => `report:${body.node}`,
  build: (body: Pick<BuildBody, 'id'>) => `build:${body.id}`,
  upgrade: (body: Pick<UpgradeBody, 'module'>) => `upgrade:${body.module}`,
  'catch-up': (_body: CatchUpBody) => 'catch-up',
  enrolled: (body: EnrolledBody) => `enrolled:${body.node}`,
} as const;

/**
 * Who asked for an operator's queued request (a build, an upgrade, a catch-up), as the route's
 * edge saw it: the consumer writes it in the audit record of the change the message makes, so
 * the record names the operator, not the queue. A host's report and the control plane's own
 * messages carry none.
 */
const askedBy = z.strictObject({
  principal: z.string().min(1).max(2048),
  source: z.string().min(1).max(256),
  requestId: z.string().min(1).max(256),
});

const envelopeOf = <Type extends string, Body extends z.ZodType>(type: Type, body: Body) =>
  z.strictObject({
    type: z.literal(type),
    subject: z.string().min(1).max(128),
    sentAt: isoTime,
    by: askedBy.optional(),
    body,
  });

export const controlMessage = z.discriminatedUnion('type', [
  envelopeOf('report', reportBody),
  envelopeOf('build', buildBody),
  envelopeOf('upgrade', upgradeBody),
  envelopeOf('catch-up', catchUpBody),
  envelopeOf('enrolled', enrolledBody),
]);

export type ControlMessage = z.infer<typeof controlMessage>;
export type MessageType = ControlMessage['type'];
const messageTypes: readonly MessageType[] = ['report', 'build', 'upgrade', 'catch-up', 'enrolled'];

export type ReportMessage = Extract<ControlMessage, { type: 'report' }>;
export type BuildMessage = Extract<ControlMessage, { type: 'build' }>;
export type UpgradeMessage = Extract<ControlMessage, { type: 'upgrade' }>;
export type CatchUpMessage = Extract<ControlMessage, { type: 'catch-up' }>;
export type EnrolledMessage = Extract<ControlMessage, { type: 'enrolled' }>;

/** Wraps a body in its envelope with the subject it belongs under, and who asked when an operator did. */
export function envelope<Type extends MessageType>(
  type: Type,
  body: Extract<ControlMessage, { type: Type }>['body'],
  sentAt: Date = new Date(),
  by?: Actor,
): Extract<ControlMessage, { type: Type }> {
  const subject = (subjectOf[type] as (value: typeof body) => string)(body);
  const asked = by ? { by: { principal: by.principal, source: by.source, requestId: by.requestId } } : {};
  return { type, subject, sentAt: sentAt.toISOString(), ...asked, body } as Extract<
    ControlMessage,
    { type: Type }
  >;
}

export type Parsed =
  | { readonly ok: true; readonly message: ControlMessage }
  | { readonly ok: false; readonly reason: string; readonly type?: string; readonly subject?: string };

/**
 * Reads a queue body. Every way it can be wrong has a reason a person can act on, since that
 * reason is all the dead-letter queue keeps besides the body.
 */
export function parseControlMessage(raw: string): Parsed {
  if (Buffer.byteLength(raw) > maxMessageBytes) {
    return { ok: false, reason: `oversize: the body is larger than ${maxMessageBytes} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, reason: 'bad JSON: the body is not valid JSON' };
  }
  const loose = value as { type?: unknown; subject?: unknown } | null;
  const type = typeof loose?.type === 'string' ? loose.type : undefined;
  const subject = typeof loose?.subject === 'string' ? loose.subject : undefined;
  const known = { ...(type ? { type } : {}), ...(subject ? { subject } : {}) };
  if (!type || !(messageTypes as readonly string[]).includes(type)) {
    return { ok: false, reason: `unknown type: ${JSON.stringify(type ?? null).slice(0, 60)}`, ...known };
  }
  const parsed = controlMessage.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || 'message'}: ${issue.message}`,
    );
    return { ok: false, reason: `schema: ${problems.join('; ')}`.slice(0, 900), ...known };
  }
  const message = parsed.data;
  const expected = (subjectOf[message.type] as (body: unknown) => string)(message.body);
  if (message.subject !== expected) {
    return {
      ok: false,
      reason: `schema: subject ${message.subject} does not match its body (${expected})`,
      ...known,
    };
  }
  return { ok: true, message };
}
