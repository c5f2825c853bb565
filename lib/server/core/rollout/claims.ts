import { RolloutStateError } from './errors.ts';
import { holdsNodes, type RolloutRecord, sizeOf } from './record.ts';

/**
 * A rollout's claims on its own nodes as a job (docs/decisions/rollouts-in-waves.md): a start
 * records the rollout `claiming`, the driver claims its nodes a bounded step at a time, and a
 * rollout that ends before they are all claimed (refused, aborted) lets go of them the same way.
 */

/** How far the claims of a rollout's own nodes came (counted wave after wave, as cut at the start). */
export type ClaimProgress = { readonly claimed: number; readonly total: number };

/** Why claiming refused the rollout: the rollout holding some of its nodes, and a few of them. */
export type Refusal = {
  readonly code: 'rollout_overlap';
  readonly rollout: string;
  readonly state: string;
  /** How many of the nodes claiming met that rollout holds (at least: claiming stops at the first). */
  readonly nodes: number;
  readonly some: readonly string[];
};

/**
 * The most own nodes one claiming (or releasing) step takes; a step also stops after its time
 * (lib/server/core/rollout/service.ts). No claim lies past `claimed` and one step's nodes, so a refusal
 * lets go of the nodes before that and no others.
 */
export const claimsPerStep = 5_000;

/**
 * `mesh rollout abort`: nothing more is sent; the nodes not sent stay behind. Its claims are let
 * go a step at a time by the driver, as a refused one's are: those it may have made while
 * claiming, or all of its own nodes' once it ran.
 */
export function aborted(
  record: RolloutRecord,
  now: string,
  reason = 'aborted by an operator',
  perStep = claimsPerStep,
): RolloutRecord {
  if (
    record.state === 'done' ||
    record.state === 'aborted' ||
    record.state === 'refused' ||
    record.state === 'undone'
  )
    throw new RolloutStateError(record.id, record.state, 'aborted');
  const ended = { ...record, state: 'aborted' as const, reason, updatedAt: now };
  return {
    ...ended,
    releasing: record.state === 'claiming' ? claimedSoFar(record, perStep) : allClaims(record),
  };
}

/**
 * A rollout that ran to its end: its claims are let go a step at a time by the driver, so an end
 * costs no more in one step than a claiming step does, however many nodes it held.
 */
export const finished = (record: RolloutRecord, now?: string): RolloutRecord => ({
  ...record,
  state: 'done',
  releasing: allClaims(record),
  ...(now ? { updatedAt: now } : {}),
});

/** Every own node of a rollout that claimed them all: its whole span, paired nodes counted and never claimed. */
const allClaims = (record: RolloutRecord) => ({ released: 0, upto: sizeOf(record) });

/** A new rollout, recorded before any of its own nodes is claimed: the driver claims them. */
export const claiming = (record: RolloutRecord): RolloutRecord => ({
  ...record,
  state: 'claiming',
  claims: { claimed: 0, total: sizeOf(record) },
});

/** Claiming came `claimed` nodes further; all claimed, the rollout runs (its first wave next). */
export function claimedTo(record: RolloutRecord, claimed: number, now: string): RolloutRecord {
  const total = record.claims?.total ?? 0;
  const claims = { claimed: Math.min(claimed, total), total };
  return { ...record, claims, state: claims.claimed >= total ? 'running' : 'claiming', updatedAt: now };
}

/** Claiming met another rollout's nodes: refused, the claims it may have made let go after. */
export function refusedBy(
  record: RolloutRecord,
  refusal: Refusal,
  reason: string,
  now: string,
  perStep = claimsPerStep,
): RolloutRecord {
  const releasing = claimedSoFar(record, perStep);
  return { ...record, state: 'refused', refusal, reason, releasing, updatedAt: now };
}

/** The own nodes a claiming rollout may hold: those claimed, and those a step (of `perStep`) in flight may have. */
const claimedSoFar = (record: RolloutRecord, perStep: number) => ({
  released: 0,
  upto: Math.min(record.claims?.total ?? sizeOf(record), (record.claims?.claimed ?? 0) + perStep),
});

/**
 * Its claims let go up to `released`; all of them, nothing is left for the driver. The range
 * stays in the record once it is let go: an ended rollout that let go a step at a time is never
 * let go of again whole.
 */
export function releasedTo(record: RolloutRecord, released: number, now: string): RolloutRecord {
  const upto = record.releasing?.upto ?? 0;
  return { ...record, releasing: { released: Math.min(released, upto), upto }, updatedAt: now };
}

/** Claims an ended rollout still has to let go of, a step at a time. */
export const isReleasing = (record: Pick<RolloutRecord, 'releasing'>) =>
  record.releasing !== undefined && record.releasing.released < record.releasing.upto;

/**
 * Taken back by the undo rollout that has taken over its claims on the nodes it changed: its
 * other claims (the nodes it never sent, whose version the undo set back) are let go a step at a
 * time; a claim the undo holds now is left (`claimedByThis`).
 */
export function undone(record: RolloutRecord, now: string): RolloutRecord {
  const before = record.reason ? ` (it was ${record.state}: ${record.reason})` : '';
  const reason = `undone by rollout ${record.undoneBy ?? '?'}: the nodes it changed are sent what they had before${before}`;
  const releasing = holdsNodes(record.state)
    ? record.state === 'claiming'
      ? claimedSoFar(record, claimsPerStep)
      : allClaims(record)
    : record.releasing;
  return { ...record, state: 'undone', reason, updatedAt: now, ...(releasing ? { releasing } : {}) };
}

/** Halted with `--auto-undo` and its undo not asked for yet: the driver asks for it on its next step. */
export const awaitsAutoUndo = (record: Pick<RolloutRecord, 'state' | 'options' | 'undoneBy'>) =>
  record.state === 'halted' && record.options.autoUndo === true && record.undoneBy === undefined;

/** Kept in the driver's list: running, claiming, ended with claims still to let go, or an auto-undo to ask for. */
export const isDriven = (record: Pick<RolloutRecord, 'state' | 'releasing' | 'options' | 'undoneBy'>) =>
  record.state === 'running' || record.state === 'claiming' || isReleasing(record) || awaitsAutoUndo(record);
