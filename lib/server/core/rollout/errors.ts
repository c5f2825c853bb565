import { ErrorTable, refused } from '../error-table.ts';

/** The rollout area's one error tree (lib/core/rollout), and at the end its table: one row each. */
export class RolloutError extends Error {
  override name = 'RolloutError';
}

/** `--waves`, `--max-failures` or `--wave-timeout` that cannot be read: what is wrong, and how it is written. */
export class RolloutUsageError extends RolloutError {
  override name = 'RolloutUsageError';
}

export class RolloutNotFoundError extends RolloutError {
  override name = 'RolloutNotFoundError';
  readonly rollout: string;
  constructor(rollout: string, options?: ErrorOptions) {
    super(`no rollout named ${rollout}`, options);
    this.rollout = rollout;
  }
}

/** Resume or abort asked of a rollout in a state that cannot take it (resume a done one, say). */
export class RolloutStateError extends RolloutError {
  override name = 'RolloutStateError';
  readonly rollout: string;
  readonly state: string;
  constructor(rollout: string, state: string, wanted: string, options?: ErrorOptions) {
    super(`rollout ${rollout} is ${state}: it cannot be ${wanted}`, options);
    this.rollout = rollout;
    this.state = state;
  }
}

/** The record changed between its read and this write (another advance, a resume): read it again. */
export class RolloutRaceError extends RolloutError {
  override name = 'RolloutRaceError';
  constructor(rollout: string, options?: ErrorOptions) {
    super(`rollout ${rollout} changed meanwhile`, options);
  }
}

/** Nothing to roll out: no node is behind, or the selector or module names none. */
export class EmptyRolloutError extends RolloutError {
  override name = 'EmptyRolloutError';
}

/** More nodes than one rollout takes (record.ts, maxRolloutNodes). */
export class RolloutTooLargeError extends RolloutError {
  override name = 'RolloutTooLargeError';
}

/**
 * A new rollout names nodes another rollout holds (running, paused or halted): two rollouts
 * waiting on the same nodes would each judge the other's revisions. Nothing was changed.
 */
export class RolloutOverlapError extends RolloutError {
  override name = 'RolloutOverlapError';
  /** The rollout that holds them (the first found, when more than one does). */
  readonly holder: string;
  /** How many of the new rollout's nodes it holds. */
  readonly nodes: number;
  readonly state: string;
  /** A few of the nodes it holds, so the operator sees which. */
  readonly some: readonly string[];
  constructor(
    holder: string,
    nodes: number,
    state: string,
    some: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(
      `${nodes} of these nodes are held by rollout ${holder} (${state})${some.length > 0 ? `, among them ${some.join(', ')}` : ''}: abort it (mesh rollout abort ${holder}) or wait for it to end`,
      options,
    );
    this.holder = holder;
    this.nodes = nodes;
    this.state = state;
    this.some = some;
  }
}

/** A page of a rollout asked with a cursor from before a wave was sent, which moves nodes between waves. */
export class RolloutMovedError extends RolloutError {
  override name = 'RolloutMovedError';
  constructor(rollout: string, options?: ErrorOptions) {
    super(`rollout ${rollout} sent a wave since the first page: read it again from the start`, options);
  }
}

/**
 * An abort that would let the rollout's change out: nodes it never sent are behind, so the next
 * push would send them what its waves were holding back (docs/decisions/held-back.md).
 */
export class RolloutWouldReleaseError extends RolloutError {
  override name = 'RolloutWouldReleaseError';
  readonly rollout: string;
  readonly nodes: number;
  readonly some: readonly string[];
  constructor(rollout: string, nodes: readonly string[], options?: ErrorOptions) {
    const some = nodes.slice(0, 5);
    super(
      `aborting rollout ${rollout} would let its change out: ${nodes.length} node${nodes.length === 1 ? '' : 's'} it never sent ${nodes.length === 1 ? 'is' : 'are'} behind (${some.join(', ')}${nodes.length > some.length ? ', …' : ''}), and the next push would send ${nodes.length === 1 ? 'it' : 'them'} what the mesh declares. Go on with mesh rollout resume ${rollout}, or change the mesh back so they are no longer behind, then abort`,
      options,
    );
    this.rollout = rollout;
    this.nodes = nodes.length;
    this.some = some;
  }
}

/** An undo asked of a rollout whose change cannot be set back: not an upgrade, or one with no version before it. */
export class RolloutUndoError extends RolloutError {
  override name = 'RolloutUndoError';
}

/**
 * A version no release is published for (no `arch`), or none for an architecture that `hosts`
 * hosts of the rollout run; `nodes` names the first few of them.
 */
export type ReleaseGap = {
  readonly version: string;
  readonly arch?: string;
  readonly hosts?: number;
  readonly nodes?: readonly string[];
};

/**
 * An agent upgrade of a version no release is published for, or none for an architecture some
 * host runs, or an undo that would set hosts back to such a version: a host asked for it could
 * only fail its revision (`mesh agent publish FILE`).
 */
export class ReleaseNotPublishedError extends RolloutError {
  override name = 'ReleaseNotPublishedError';
  /** The versions of the gaps named, each once. */
  readonly versions: readonly string[];
  /** The first `gapsNamed` gaps, in the order given. */
  readonly gaps: readonly ReleaseGap[];
  /** Gaps past those named: hosts report what versions they ran, so an undo's can be many. */
  readonly more: number;

  constructor(found: readonly ReleaseGap[], doing: string, options?: ErrorOptions) {
    const gaps = found.slice(0, gapsNamed);
    const more = found.length - gaps.length;
    const versions = [...new Set(gaps.map((gap) => gap.version))];
    const unpublished = gaps.filter((gap) => gap.arch === undefined).map((gap) => gap.version);
    const said = [
      ...(unpublished.length > 0 ? [`no release of mesh-host ${unpublished.join(', ')} is published`] : []),
      ...gaps.flatMap((gap) =>
        gap.arch === undefined
          ? []
          : [`mesh-host ${gap.version} is not published for ${gap.arch} (${hostsNamed(gap)})`],
      ),
      ...(more > 0 ? [`${more} more`] : []),
    ];
    super(
      `${doing}: ${said.join('; ')}, so a host asked for ${versions.length === 1 ? 'it' : 'them'} could only fail; mesh agent publish FILE adds a release`,
      options,
    );
    this.versions = versions;
    this.gaps = gaps;
    this.more = more;
  }
}

/** Gaps a refusal names: its answer stays small however many versions the hosts ran. */
const gapsNamed = 20;

/** `2 hosts run it: arm-1, arm-2`, with an ellipsis past the nodes named. */
function hostsNamed(gap: ReleaseGap): string {
  const hosts = gap.hosts ?? 0;
  const named = gap.nodes ?? [];
  return `${hosts} ${hosts === 1 ? 'host runs' : 'hosts run'} it: ${named.join(', ')}${hosts > named.length ? ', …' : ''}`;
}

export const rolloutErrors = new ErrorTable({
  RolloutError: refused(RolloutError, 409, 'rollout_refused'),
  RolloutUsageError: refused(RolloutUsageError, 400, 'rollout_usage'),
  RolloutNotFoundError: refused(RolloutNotFoundError, 404, 'rollout_not_found', {
    details: (error: RolloutNotFoundError) => ({ rollout: error.rollout }),
  }),
  RolloutStateError: refused(RolloutStateError, 409, 'rollout_state', {
    details: (error: RolloutStateError) => ({ rollout: error.rollout, state: error.state }),
  }),
  RolloutRaceError: refused(RolloutRaceError, 409, 'rollout_changed'),
  EmptyRolloutError: refused(EmptyRolloutError, 409, 'rollout_empty'),
  RolloutTooLargeError: refused(RolloutTooLargeError, 413, 'rollout_too_large'),
  RolloutOverlapError: refused(RolloutOverlapError, 409, 'rollout_overlap', {
    details: (error: RolloutOverlapError) => ({
      rollout: error.holder,
      nodes: error.nodes,
      state: error.state,
      some: error.some,
    }),
  }),
  RolloutMovedError: refused(RolloutMovedError, 409, 'rollout_moved'),
  RolloutWouldReleaseError: refused(RolloutWouldReleaseError, 409, 'rollout_would_release', {
    details: (error: RolloutWouldReleaseError) => ({
      rollout: error.rollout,
      nodes: error.nodes,
      some: error.some,
    }),
  }),
  RolloutUndoError: refused(RolloutUndoError, 409, 'rollout_undo_refused'),
  ReleaseNotPublishedError: refused(ReleaseNotPublishedError, 404, 'release_not_found', {
    details: (error: ReleaseNotPublishedError) => ({
      versions: error.versions,
      gaps: error.gaps,
      ...(error.more > 0 ? { more: error.more } : {}),
    }),
  }),
});
