import type { Declaration } from './declaration.ts';

/**
 * How many of a node's relations wait for an enrolment, as its last send left them: what
 * `GET /status` shows on the node's row and the summary counts. The declaration itself names
 * each relation (`waiting`); this is its size-bounded digest, kept on the delivery item so a
 * view reads it with the partition it reads anyway.
 */
export type WaitingRelations = {
  /** Relations not minted because a side has no completed enrolment. */
  readonly relations: number;
  /** Distinct nodes those relations wait for. */
  readonly nodes: number;
  /** The first of those nodes by name, at most `waitingNodesNamed`: a row stays small however many wait. */
  readonly for: readonly string[];
};

/** Nodes a status row names; `nodes` says how many there are in all. */
export const waitingNodesNamed = 10;

/** The digest of a declaration's waiting relations; undefined when none waits. */
export function waitingOf(all: Declaration['waiting']): WaitingRelations | undefined {
  // a relation that waits with a held-back provider is named by the push, not counted as waiting for an enrolment
  const waiting = all.filter((w) => w.heldBack === undefined);
  if (waiting.length === 0) return undefined;
  const nodes = [...new Set(waiting.flatMap((w) => w.waitingFor))].sort();
  return { relations: waiting.length, nodes: nodes.length, for: nodes.slice(0, waitingNodesNamed) };
}
