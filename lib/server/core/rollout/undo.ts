import { RolloutStateError, RolloutUndoError } from './errors.ts';
import type { RolloutStore } from './ports.ts';
import type { RolloutRecord } from './record.ts';
import type { RolloutOptions } from './waves.ts';

/**
 * Undo (docs/decisions/held-back.md): an upgrade's version set back and sent to the nodes the
 * rollout changed, in its own waves, gated the same way. It goes where every upgrade goes, the
 * control queue: its message sets the version back on every carrier (the nodes never sent are
 * then no longer behind: the change is withdrawn from them), and starts the undo rollout, which
 * takes over the rollout's claims on the nodes it sent without letting any go in between.
 */
export type UndoRequest = {
  readonly module: string;
  /** The version set back: the rollout's `from`. */
  readonly version: string;
  /** The rollout taken back, and the new rollout's id. */
  readonly undoes: string;
  readonly rollout: string;
  readonly options: RolloutOptions;
};

/**
 * What an undo sets back: a module's version (`from`), or, for an agent upgrade, each node's own
 * version before it (kept per node, core/mesh/agent-before.ts); RolloutUndoError when there is
 * none to set.
 */
export type UndoTarget =
  | { readonly kind: 'upgrade'; readonly module: string; readonly from: string }
  | { readonly kind: 'agent'; readonly version: string };

export function undoTarget(record: RolloutRecord): UndoTarget {
  const { origin } = record;
  if (origin.kind === 'agent') {
    if (record.state === 'refused' || record.state === 'undone')
      throw new RolloutStateError(record.id, record.state, 'undone');
    return { kind: 'agent', version: origin.version };
  }
  if (origin.kind !== 'upgrade')
    throw new RolloutUndoError(
      `rollout ${record.id} is ${origin.kind === 'undo' || origin.kind === 'agent-undo' ? 'an undo: it set back what another rollout changed; upgrade again to go forward' : "a push in waves: it sent what the mesh declares, which only a change of the mesh takes back (then push in waves); undo sets back an upgrade's version"}`,
    );
  if (origin.from === undefined || origin.from === null || origin.from === origin.version)
    throw new RolloutUndoError(
      `rollout ${record.id} has no version before ${origin.module} ${origin.version} to set back: upgrade to the one you want (mesh upgrade ${origin.module} VERSION --waves …)`,
    );
  if (record.state === 'refused' || record.state === 'undone')
    throw new RolloutStateError(record.id, record.state, 'undone');
  return { kind: 'upgrade', module: origin.module, from: origin.from };
}

const beingUndone = (undoId: string) => `being undone by rollout ${undoId}`;

/** The undo asked for: named on the record; a running rollout sends no further wave meanwhile. */
export const undoAsked = (record: RolloutRecord, undoId: string, at: string): RolloutRecord => ({
  ...record,
  undoneBy: undoId,
  ...(record.state === 'running' ? { state: 'paused' as const, reason: beingUndone(undoId) } : {}),
  updatedAt: at,
});

/** Whether the rollout was running when its undo was asked: a step may have been sending its next wave. */
export const runningWhenUndone = (record: RolloutRecord): boolean =>
  record.state === 'running' ||
  (record.state === 'paused' &&
    record.undoneBy !== undefined &&
    record.reason === beingUndone(record.undoneBy));

/**
 * The nodes the rollout sent (its own and those paired with them), wave by wave: the undo's
 * waves. A module upgrade's undo sets the version back on every carrier before its waves; an
 * agent upgrade's sets it back only in its waves, so `agent` takes more: its own nodes its waves
 * held back (their version was set all the same, to be sent once the hold lifts), and, when it
 * was running, the own nodes of the wave after the last recorded, which a step may be sending as
 * the undo is asked (it sets their version first and records the wave last, and an undo's write
 * makes that record fail). A node whose version the rollout never set is left as it is by the
 * undo's wave.
 */
export async function sentWaves(
  store: RolloutStore,
  record: RolloutRecord,
  options: { readonly agent: boolean } = { agent: false },
): Promise<string[][]> {
  const inFlight = options.agent && runningWhenUndone(record);
  const last = inFlight ? Math.min(record.current + 1, record.waves.length - 1) : record.current;
  const sent = record.waves.map((_, index) => index).filter((index) => index <= last);
  if (sent.length === 0) return [];
  const read = await store.withNodes(record, sent);
  return sent.map((index) =>
    (read.waves[index]?.nodes ?? [])
      .filter((n) => {
        if (n.state !== 'held' && n.revision !== undefined) return true;
        return options.agent && !n.paired && (n.state === 'held' || index > record.current);
      })
      .map((n) => n.node),
  );
}

/** The undo's options: its rollout's bounds and timeout, no pause, never undone itself. */
export const undoOptions = (options: RolloutOptions): RolloutOptions => ({
  waves: options.waves,
  maxFailures: options.maxFailures,
  waveTimeoutSeconds: options.waveTimeoutSeconds,
  pause: false,
});
