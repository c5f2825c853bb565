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

/** The undo asked for: named on the record; a running rollout sends no further wave meanwhile. */
export const undoAsked = (record: RolloutRecord, undoId: string, at: string): RolloutRecord => ({
  ...record,
  undoneBy: undoId,
  ...(record.state === 'running'
    ? { state: 'paused' as const, reason: `being undone by rollout ${undoId}` }
    : {}),
  updatedAt: at,
});

/**
 * The nodes the rollout sent (its own and those paired with them), wave by wave: the undo's
 * waves. With `held`, also its own nodes its waves held back: an agent upgrade set its version on
 * them all the same (sent once the hold lifts), and nothing but its undo's wave sets it back; a
 * module upgrade's undo sets the version back on every carrier before its waves.
 */
export async function sentWaves(
  store: RolloutStore,
  record: RolloutRecord,
  options: { readonly held: boolean } = { held: false },
): Promise<string[][]> {
  const sent = record.waves.map((_, index) => index).filter((index) => index <= record.current);
  if (sent.length === 0) return [];
  const read = await store.withNodes(record, sent);
  return sent.map((index) =>
    (read.waves[index]?.nodes ?? [])
      .filter(
        (n) =>
          (n.state !== 'held' && n.revision !== undefined) ||
          (options.held && n.state === 'held' && !n.paired),
      )
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
