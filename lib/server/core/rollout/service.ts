import { randomBytes } from 'node:crypto';
import type { Actor } from '../audit/record.ts';
import { compareText } from '../canonical.ts';
import { NodeNotFoundError } from '../mesh/errors.ts';
import type { AgentAsking, HostsAsked } from '../mesh/ports.ts';
import type { PushOutcome } from '../push/ports.ts';
import { type Advanced, advance } from './advance.ts';
import {
  aborted,
  awaitsAutoUndo,
  claimedTo,
  claiming,
  claimsPerStep,
  isDriven,
  isReleasing,
  refusedBy,
  releasedTo,
  undone,
} from './claims.ts';
import {
  EmptyRolloutError,
  type ReleaseGap,
  ReleaseNotPublishedError,
  RolloutError,
  RolloutMovedError,
  RolloutNotFoundError,
  RolloutRaceError,
  RolloutUndoError,
  RolloutWouldReleaseError,
} from './errors.ts';
import { type RolloutAnswer, rolloutPage, spanOf } from './pages.ts';
import type { RolloutFacts, RolloutStore, RolloutSummary, StepBudget } from './ports.ts';
import {
  countsOf,
  holdsNodes,
  newRollout,
  type RolloutOrigin,
  type RolloutRecord,
  resumed,
  versionsBeforeLimit,
  type WaveSend,
  waveSent,
  withVersionsBefore,
} from './record.ts';
import { sentWaves, type UndoRequest, undoAsked, undoOptions, undoTarget } from './undo.ts';
import type { RolloutOptions } from './waves.ts';

export type RolloutDeps = {
  readonly store: RolloutStore;
  readonly facts: RolloutFacts;
  /**
   * One wave's push: its nodes, then what they pair with (lib/server/core/push/steps.ts, `nodes`);
   * the rollout's own nodes are not held back from it, anything else held back is left alone.
   */
  readonly wave: (nodes: readonly string[], rollout: string) => Promise<PushOutcome>;
  /** The nodes behind now, for a rollout of `push --behind` or of a named node's flush. */
  readonly behind: () => Promise<string[]>;
  /** Whether a node exists: a named push's node must (NodeNotFoundError), as `POST /push` says. */
  readonly exists: (node: string) => Promise<boolean>;
  readonly now: () => Date;
  /** How much one claiming or releasing step does (claimStep by default). */
  readonly claimStep?: StepBudget;
  /** Of these nodes, the ones marked possibly behind: an abort that would let its change out to them is refused. */
  readonly marked?: (nodes: readonly string[]) => Promise<string[]>;
  /**
   * Moves a wave's carriers to an upgrade's (or an undo's) version just before the wave is sent:
   * until its wave, no node is behind on it, so nothing else can send it (docs/decisions/held-back.md).
   */
  readonly moveCarriers?: (module: string, version: string, nodes: readonly string[]) => Promise<void>;
  /**
   * Sets an agent upgrade's version on a wave's nodes just before the wave is sent, as
   * moveCarriers does a module's, each node remembering its version before under the rollout
   * (AgentVersions.setAgentVersion); answers the distinct versions before.
   */
  readonly setAgentVersion?: (
    version: string,
    nodes: readonly string[],
    rollout: string,
    limit: number,
  ) => Promise<readonly string[]>;
  /** Sets a wave's nodes back to their versions before an agent upgrade (AgentVersions.restoreAgentVersion). */
  readonly restoreAgentVersion?: (
    rollout: string,
    version: string,
    nodes: readonly string[],
  ) => Promise<void>;
  /**
   * Of these agent versions, the architectures a release of each is published for (a version
   * with no release is absent, or has none), asked once for a check; absent, agent versions are
   * not checked.
   */
  readonly published?: (versions: readonly string[]) => Promise<ReadonlyMap<string, readonly string[]>>;
  /**
   * What an agent upgrade or its undo would ask of each node's host, by version and by the
   * architecture the host reports (AgentVersions.askedOf): each must have a release. Absent,
   * only that each version has some release is checked.
   */
  readonly askedOf?: (nodes: readonly string[], asking: AgentAsking) => Promise<HostsAsked>;
  /** Tells the driver of a rollout recorded here (an agent upgrade's undo, started without the queue). */
  readonly drive?: (record: RolloutRecord) => Promise<void>;
  /** Asks for an undo where upgrades go (the control queue); absent, undo is refused. */
  readonly requestUndo?: (request: UndoRequest, by: Actor) => Promise<void>;
  /** Whether something steps the rollout (RolloutDriver.driving); absent, a driven rollout is taken as stepped. */
  readonly driving?: (id: string) => Promise<boolean>;
};

/** Who asks for an undo a rollout's `--auto-undo` asked for: the control plane, on the rollout's behalf. */
/** Nodes a release gap names: enough to find them, `hosts` says how many there are. */
const gapNodesNamed = 5;

const autoUndoActor = (record: RolloutRecord): Actor => ({
  principal: `rollout ${record.id} (--auto-undo)`,
  source: 'control-plane',
  requestId: record.id,
});

/**
 * A claiming step's bound: at most claimsPerStep nodes, no new batch after 10 s, so a step stays
 * far inside a Lambda's budget (rollout-advance's 330 s) and a local driver's other rollouts wait
 * seconds, not minutes.
 */
export const claimStep: StepBudget = { nodes: claimsPerStep, ms: 10_000 };

/** How many times a page is read while steps keep replacing its parts (each read a fresh header). */
const pageReads = 5;

/** `20260722T101500123Z-4f2a9c`, as a push's id: the start time, then six random hex digits; ids sort by time. */
export const newRolloutId = (at: Date) =>
  `${at.toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;
export const rolloutIdPattern = /^\d{8}T\d{9}Z-[0-9a-f]{6}$/;

/**
 * Rollouts as a job with a record (docs/decisions/rollouts-in-waves.md). `step` is the one way a
 * rollout moves: read the record, learn the facts of its wave in flight, decide (advance.ts),
 * send the next wave if that is the decision, write the record if it is still the one read. A
 * step that dies anywhere is taken again by the next: a wave sent twice sends nothing new.
 */
export class Rollouts {
  readonly #deps: RolloutDeps;

  constructor(deps: RolloutDeps) {
    this.#deps = deps;
  }

  get #budget(): StepBudget {
    return this.#deps.claimStep ?? claimStep;
  }

  /**
   * Records a new rollout, its nodes not yet claimed (its header and parts: writes by its parts,
   * not its nodes); the driver claims them a step at a time, then sends its first wave. The same
   * id twice starts it once. Nodes another rollout holds are found while claiming and refuse it
   * (state `refused`), except that an upgrade takes over from a halted upgrade of the same module:
   * that one is aborted, superseded, as the rollback of a bad version (`mesh upgrade MODULE
   * PREVIOUS`) needs.
   */
  async start(input: {
    readonly id?: string;
    readonly origin: RolloutOrigin;
    /** The nodes of an `--on` or upgrade rollout; a push's are found behind. */
    readonly nodes?: readonly string[];
    readonly options: RolloutOptions;
    /** Who started it: its audit record names them. */
    readonly by: Actor;
  }): Promise<RolloutRecord> {
    const now = this.#deps.now();
    const nodes = await this.#nodesOf(input.origin, input.nodes ?? []);
    if (nodes.length === 0)
      throw new EmptyRolloutError(`nothing to roll out: ${describeOrigin(input.origin)} names no node`);
    if (input.origin.kind === 'agent') {
      const { version } = input.origin;
      await this.#releasedFor(nodes, { kind: 'set', version }, [version], describeOrigin(input.origin));
    }
    const record = claiming(
      newRollout({
        id: input.id ?? newRolloutId(now),
        origin: input.origin,
        nodes,
        rollout: input.options,
        now: now.toISOString(),
      }),
    );
    // a few starts that died between their parts and their header are swept first (a bounded few);
    // a sweep that fails is left to the next start, never this one's refusal
    await this.#deps.store.sweep().catch(() => 0);
    if (await this.#deps.store.create(record, input.by)) return record;
    return (await this.#deps.store.read(record.id)) ?? record;
  }

  async #nodesOf(origin: RolloutOrigin, given: readonly string[]): Promise<string[]> {
    if (origin.kind === 'behind') return (await this.#deps.behind()).sort();
    if (origin.kind === 'push') {
      if (!(await this.#deps.exists(origin.node))) throw new NodeNotFoundError(origin.node);
      const others = (await this.#deps.behind()).filter((node) => node !== origin.node).sort();
      return [origin.node, ...others];
    }
    return [...given];
  }

  /**
   * One move of the rollout; RolloutRaceError when another step wrote first (its move stands).
   * It reads the header and the wave in flight; a send reads the wave it sends, and the later
   * waves its sends pair with, never the others.
   */
  async step(id: string): Promise<Advanced> {
    const { store } = this.#deps;
    let record = await this.read(id);
    if (awaitsAutoUndo(record) || (await this.#autoUndoUnrecorded(record))) {
      try {
        const undoId = await this.undo(id, autoUndoActor(record));
        return { record: await this.read(id), decision: { kind: 'undoing', rollout: undoId } };
      } catch (error) {
        if (!(error instanceof RolloutError)) throw error;
        // refused (a version before not published): asked again on every step it would be
        // refused again, so the halt stands with the refusal as its reason, for an operator
        const reason = `${record.reason ?? 'halted'}; its --auto-undo was refused: ${error.message}`;
        const kept = await store.write({
          ...record,
          options: { ...record.options, autoUndo: false },
          reason,
          updatedAt: this.#deps.now().toISOString(),
        });
        return { record: kept, decision: { kind: 'halted', reason } };
      }
    }
    if (record.state === 'claiming') return this.#claim(record);
    if (isReleasing(record)) return this.#release(record);
    if (record.state === 'running' && record.current >= 0)
      record = await store.withNodes(record, [record.current]);
    const open = record.current < 0 ? [] : (record.waves[record.current]?.nodes ?? []);
    const waiting = open.filter((n) => n.state === 'waiting' || n.state === 'offline').map((n) => n.node);
    const facts = waiting.length > 0 ? await this.#deps.facts.of(waiting) : new Map();
    const now = this.#deps.now();
    let advanced = advance(record, facts, now);
    if (advanced.decision.kind === 'unread')
      advanced = advance(await store.withNodes(advanced.record, [advanced.decision.wave]), facts, now);
    const { decision } = advanced;
    if (decision.kind !== 'send') {
      if (advanced.record === record) return advanced;
      return { record: await store.write(advanced.record), decision };
    }
    const { origin } = record;
    if ((origin.kind === 'upgrade' || origin.kind === 'undo') && this.#deps.moveCarriers)
      await this.#deps.moveCarriers(origin.module, origin.version, decision.nodes);
    let before: readonly string[] = [];
    // the wiring gives every driver these: a wave sent without them would send nothing new
    if (origin.kind === 'agent') {
      if (!this.#deps.setAgentVersion) throw new Error('this rollout driver cannot set agent versions');
      before = await this.#deps.setAgentVersion(
        origin.version,
        decision.nodes,
        record.id,
        versionsBeforeLimit,
      );
    }
    if (origin.kind === 'agent-undo') {
      if (!this.#deps.restoreAgentVersion)
        throw new Error('this rollout driver cannot set agent versions back');
      await this.#deps.restoreAgentVersion(origin.rollout, origin.version, decision.nodes);
    }
    const outcome = await this.#deps.wave(decision.nodes, record.id);
    const sent = new Map(outcome.flushed.map((f) => [f.node, f.revision]));
    // nodes the wave left alone; a node sent with a relation that waits was sent all the same
    const heldBack = new Map(
      (outcome.heldBack ?? []).filter((h) => !sent.has(h.node)).map((h) => [h.node, h]),
    );
    const unsent = decision.nodes.filter((node) => !sent.has(node) && !heldBack.has(node));
    const found = unsent.length > 0 ? await this.#deps.facts.revisions(unsent) : new Map<string, number>();
    const sends: WaveSend[] = [
      ...[...sent].map(([node, revision]) => ({ node, revision })),
      ...[...found].map(([node, revision]) => ({ node, revision })),
      ...[...heldBack.values()].map((h) => ({ node: h.node, heldBy: h.by, waitsFor: h.waitsFor })),
    ];
    const own = new Set(decision.nodes);
    const outside = sends.map((s) => s.node).filter((node) => !own.has(node));
    const held = outside.length > 0 ? await store.held(advanced.record, outside) : new Map<string, number>();
    const later = [...new Set(held.values())].filter((wave) => wave > decision.wave);
    const sending = later.length > 0 ? await store.withNodes(advanced.record, later) : advanced.record;
    // own nodes of later waves this wave's sends took along: released with this wave
    const moved = [...held].filter(([, wave]) => wave > decision.wave).map(([node]) => node);
    await store.moveClaims(advanced.record, decision.wave, moved);
    const next = withVersionsBefore(
      waveSent(sending, decision.wave, sends, this.#deps.now().toISOString(), held),
      before,
    );
    return { record: await store.write(next), decision };
  }

  /**
   * One claiming step: the next own nodes claimed, within the step's budget. All claimed, the
   * rollout runs; another rollout holding some refuses it (its claims let go by the next steps),
   * unless that one is a halted upgrade this upgrade supersedes.
   */
  async #claim(record: RolloutRecord): Promise<Advanced> {
    const { store } = this.#deps;
    const from = record.claims?.claimed ?? 0;
    const total = record.claims?.total ?? 0;
    const step = await store.claim(record, from, this.#budget);
    const at = this.#deps.now().toISOString();
    if ('claimed' in step) {
      const next = await store.write(claimedTo(record, step.claimed, at));
      if (next.state === 'running' && (next.origin.kind === 'undo' || next.origin.kind === 'agent-undo'))
        await this.#takenBack(next.origin.rollout);
      return {
        record: next,
        decision:
          next.state === 'running'
            ? { kind: 'claimed', total }
            : { kind: 'claiming', claimed: next.claims?.claimed ?? step.claimed, total },
      };
    }
    const { overlap } = step;
    const holder = await store.read(overlap.holder);
    if (holder && supersedes(record.origin, holder)) {
      const reason = `superseded by rollout ${record.id} (${describeOrigin(record.origin)})`;
      await store.write(aborted(holder, at, reason));
      return { record, decision: { kind: 'superseded', rollout: holder.id } };
    }
    const refusal = {
      code: 'rollout_overlap' as const,
      rollout: overlap.holder,
      state: overlap.state,
      nodes: overlap.nodes,
      some: overlap.some,
    };
    const next = await store.write(refusedBy(record, refusal, overlap.message, at, this.#budget.nodes));
    return { record: next, decision: { kind: 'refused', reason: overlap.message } };
  }

  /** The rollout an undo took back, once the undo holds every node it changed: `undone`, its other claims let go. */
  async #takenBack(id: string): Promise<void> {
    const original = await this.#deps.store.read(id);
    if (!original || original.state === 'undone') return;
    await this.#deps.store.write(undone(original, this.#deps.now().toISOString()));
  }

  /** One releasing step: the claims an ended rollout may hold, let go a step's worth at a time. */
  async #release(record: RolloutRecord): Promise<Advanced> {
    const { released, upto } = record.releasing ?? { released: 0, upto: 0 };
    const reached = await this.#deps.store.release(record, released, upto, this.#budget);
    const next = await this.#deps.store.write(releasedTo(record, reached, this.#deps.now().toISOString()));
    return { record: next, decision: { kind: 'releasing', released: reached, upto } };
  }

  /** The record's header: every wave's tally, no wave's nodes. */
  async read(id: string): Promise<RolloutRecord> {
    const record = await this.#deps.store.read(id);
    if (!record) throw new RolloutNotFoundError(id);
    return record;
  }

  /**
   * A page of the rollout: its header with every wave's counts, and its nodes from the `at`-th
   * (of all the waves, or of one) while the page fits `bytes`; reads the header and the parts
   * of waves the page shows. RolloutMovedError when a wave was sent since the page's cursor was
   * given (`layout`): a send moves nodes between waves.
   */
  async page(
    id: string,
    asked: {
      readonly wave?: number | undefined;
      readonly at?: number | undefined;
      readonly layout?: string | undefined;
      readonly limit?: number | undefined;
    },
    bytes: number,
  ): Promise<{
    readonly page: RolloutAnswer;
    readonly next: number | null;
    readonly layout: string;
    readonly summary: RolloutSummary;
  }> {
    // a step writing as the page is read replaces the parts the header read named: read again
    for (let attempt = 1; ; attempt += 1) {
      const record = await this.read(id);
      const layout = String(record.current);
      if (asked.layout !== undefined && asked.layout !== layout) throw new RolloutMovedError(id);
      const { start, end } = spanOf(record, asked.wave);
      const at = asked.at ?? start;
      if (at < start || (at >= end && at > start)) throw new RolloutMovedError(id);
      try {
        const runs = at < end ? await this.#deps.store.nodesFrom(record, at, bytes) : [];
        return {
          ...rolloutPage(record, runs, at, end, bytes, asked.limit),
          layout,
          summary: summaryOf(record),
        };
      } catch (error) {
        if (!(error instanceof RolloutRaceError) || attempt === pageReads) throw error;
      }
    }
  }

  /** A paused or halted rollout goes on; `by` is recorded on the audit trail with it. */
  async resume(id: string, by?: Actor): Promise<RolloutRecord> {
    const read = await this.read(id);
    const now = this.#deps.now().toISOString();
    const change = by ? { by, action: 'rollout.resume' as const } : undefined;
    // A rollout its record says is driven, that nothing steps (its flow's execution failed for
    // good, or someone stopped it), goes on where its record stands: the new version written
    // here names the execution the caller starts.
    if (isDriven(read) && this.#deps.driving && !(await this.#deps.driving(id)))
      return this.#deps.store.write({ ...read, updatedAt: now }, change);
    return this.#deps.store.write(resumed(read, now), change);
  }

  /**
   * Nothing more is sent; `by` is recorded on the audit trail with it. An abort never lets the
   * change out (docs/decisions/held-back.md): an upgrade's version is on no node it did not send;
   * a push in waves is refused while a node it never sent is behind (the next push would send it
   * the change), naming resume.
   */
  async abort(id: string, by?: Actor): Promise<RolloutRecord> {
    const record = await this.read(id);
    // an upgrade (an undo, an agent upgrade) puts its version on a node only as its wave sends it: what it never
    // sent does not have it; a push in waves sends what the mesh declares, so what it never sent
    // and is behind would get the change from the next push
    const pushed = !setsVersion(record.origin);
    if (pushed && holdsNodes(record.state) && this.#deps.marked) {
      const behind = await this.#deps.marked(await this.#unsent(record));
      if (behind.length > 0) throw new RolloutWouldReleaseError(record.id, behind);
    }
    const next = aborted(record, this.#deps.now().toISOString(), undefined, this.#budget.nodes);
    return this.#deps.store.write(next, by ? { by, action: 'rollout.abort' } : undefined);
  }

  /** Its own nodes no wave has sent: those an abort would let go of. */
  async #unsent(record: RolloutRecord): Promise<string[]> {
    const later = record.waves.map((_, index) => index).filter((index) => index > record.current);
    if (later.length === 0) return [];
    const read = await this.#deps.store.withNodes(record, later);
    return later.flatMap((index) =>
      (read.waves[index]?.nodes ?? []).filter((n) => !n.paired).map((n) => n.node),
    );
  }

  /**
   * `mesh rollout undo` (and `--auto-undo` on a halt): asks for the undo where upgrades go, then
   * names it on the record (a running rollout pauses meanwhile). The undo, on the control queue,
   * sets the version back and starts a rollout over the nodes this one sent, in its waves, which
   * takes over their claims. Asked again, it answers the undo already asked for.
   */
  async undo(id: string, by: Actor): Promise<string> {
    const record = await this.read(id);
    const target = undoTarget(record);
    if (target.kind === 'agent') return this.#undoAgent(record, target.version, by);
    const { module, from } = target;
    if (record.undoneBy) return record.undoneBy;
    if (!this.#deps.requestUndo) throw new RolloutUndoError('undo is not served here');
    const now = this.#deps.now();
    const rollout = newRolloutId(now);
    // asked first, then named on the record: the undo's start names it there itself if it comes first
    await this.#deps.requestUndo(
      { module, version: from, undoes: id, rollout, options: undoOptions(record.options) },
      by,
    );
    try {
      await this.#deps.store.write(undoAsked(record, rollout, now.toISOString()), {
        by,
        action: 'rollout.undo',
      });
    } catch (error) {
      const again = error instanceof RolloutRaceError ? await this.read(id) : undefined;
      if (again?.undoneBy) return again.undoneBy;
      throw error;
    }
    return rollout;
  }

  /**
   * The undo of an agent upgrade, started here rather than on the queue: no version is set on
   * nodes the rollout never sent, so there is nothing to set back before its waves. Each wave of
   * the undo sets its nodes back to the versions they ran before, each node its own. The versions
   * before are checked as published first (ReleaseNotPublishedError, nothing written). The undo is
   * named on the record, then recorded and told to the driver; asked again, a named undo that
   * was never recorded is recorded then.
   */
  async #undoAgent(record: RolloutRecord, version: string, by: Actor): Promise<string> {
    let undoId = record.undoneBy;
    /** The waves the undo takes, as read for its check: kept when this request named the undo. */
    let waves: string[][] | undefined;
    if (undoId === undefined) {
      if (record.state === 'claiming')
        throw new RolloutUndoError(
          `rollout ${record.id} is claiming its nodes and has sent no wave: no node has its version to take back; mesh rollout abort ${record.id} stops it`,
        );
      const sent = await sentWaves(this.#deps.store, record, { agent: true });
      await this.#releasedFor(
        sent.flat(),
        { kind: 'restore', rollout: record.id, version },
        record.versionsBefore ?? [],
        `undo of rollout ${record.id}`,
      );
      const now = this.#deps.now();
      undoId = newRolloutId(now);
      try {
        await this.#deps.store.write(undoAsked(record, undoId, now.toISOString()), {
          by,
          action: 'rollout.undo',
        });
        // the record written is the one read, so its sent waves are the ones read
        waves = sent;
      } catch (error) {
        const again = error instanceof RolloutRaceError ? await this.read(record.id) : undefined;
        if (!again?.undoneBy) throw error;
        undoId = again.undoneBy;
      }
    }
    const started = await this.#startUndo({
      id: undoId,
      undoes: record.id,
      origin: { kind: 'agent-undo', rollout: record.id, version },
      options: undoOptions(record.options),
      by,
      ...(waves ? { waves } : {}),
    });
    // told once recorded; asked again, told again when nothing steps it (the first telling lost)
    if (
      started &&
      (started.created ||
        (isDriven(started.record) && this.#deps.driving && !(await this.#deps.driving(undoId))))
    )
      await this.#deps.drive?.(started.record);
    return undoId;
  }

  /**
   * An agent upgrade's `--auto-undo` named on its record whose rollout was never recorded (the
   * step that asked for it died between the two writes): asked again, it is recorded then.
   */
  async #autoUndoUnrecorded(record: RolloutRecord): Promise<boolean> {
    if (record.origin.kind !== 'agent' || !record.options.autoUndo || record.undoneBy === undefined)
      return false;
    if (record.state !== 'halted' && record.state !== 'paused') return false;
    return (await this.#deps.store.read(record.undoneBy)) === undefined;
  }

  /**
   * ReleaseNotPublishedError, writing nothing, when a host of NODES would be asked for a version
   * no release is published for, or none for the architecture it reports, when releases are
   * known here: it could only fail its revision, which halts the rollout. Each node is checked
   * for what it would be asked (an undo sets each back to its own version before); a host that
   * reported no architecture is checked only for some release. `versions` (an upgrade's one, or
   * an undo's versions before) are what is checked without `askedOf`.
   */
  async #releasedFor(
    nodes: readonly string[],
    asking: AgentAsking,
    versions: readonly string[],
    doing: string,
  ): Promise<void> {
    const { published, askedOf } = this.#deps;
    if (!published) return;
    const asked = new Map<string, ReadonlyMap<string | null, readonly string[]>>(
      askedOf
        ? await askedOf(nodes, asking)
        : versions.map((version) => [version, new Map<string | null, readonly string[]>()]),
    );
    if (asking.kind === 'set' && !asked.has(asking.version)) asked.set(asking.version, new Map());
    const releases = await published([...asked.keys()]);
    const gaps: ReleaseGap[] = [];
    for (const [version, byArch] of asked) {
      const arches = releases.get(version) ?? [];
      const hostsOf = (hosts: readonly string[]) =>
        hosts.length > 0 ? { hosts: hosts.length, nodes: hosts.slice(0, gapNodesNamed) } : {};
      if (arches.length === 0) gaps.push({ version, ...hostsOf([...byArch.values()].flat()) });
      else
        for (const [arch, hosts] of byArch)
          if (arch !== null && !arches.includes(arch)) gaps.push({ version, arch, ...hostsOf(hosts) });
    }
    if (gaps.length > 0)
      throw new ReleaseNotPublishedError(
        gaps.sort((a, b) => compareText(a.version, b.version) || compareText(a.arch ?? '', b.arch ?? '')),
        doing,
      );
  }

  /**
   * The undo rollout, started where its upgrade message is settled (the version set back): over
   * the nodes the rollout sent, in its waves. One that sent nothing is undone at once: setting the
   * version back was all there was to take back.
   */
  async startUndo(input: {
    readonly id: string;
    readonly undoes: string;
    readonly module: string;
    readonly version: string;
    readonly options: RolloutOptions;
    readonly by: Actor;
  }): Promise<RolloutRecord | undefined> {
    const { module, version, ...rest } = input;
    const started = await this.#startUndo({
      ...rest,
      origin: { kind: 'undo', rollout: input.undoes, module, version },
    });
    return started?.record;
  }

  /** An undo's rollout over the nodes its rollout sent, in its waves; undefined when it sent none (then undone at once). */
  async #startUndo(input: {
    readonly id: string;
    readonly undoes: string;
    readonly origin: Extract<RolloutOrigin, { kind: 'undo' | 'agent-undo' }>;
    readonly options: RolloutOptions;
    readonly by: Actor;
    /** The rollout's sent waves, when the caller read them from the record it named the undo on. */
    readonly waves?: string[][];
  }): Promise<{ readonly record: RolloutRecord; readonly created: boolean } | undefined> {
    const { store } = this.#deps;
    const known = await store.read(input.id);
    if (known) return { record: known, created: false };
    let original = await this.read(input.undoes);
    if (original.undoneBy === undefined) {
      // the undo's message came before its request had named it on the record
      undoTarget(original);
      try {
        original = await store.write(undoAsked(original, input.id, this.#deps.now().toISOString()));
      } catch (error) {
        if (!(error instanceof RolloutRaceError)) throw error;
        original = await this.read(input.undoes);
      }
    }
    if (original.undoneBy !== input.id)
      throw new RolloutUndoError(
        `rollout ${input.undoes} is being undone by rollout ${original.undoneBy ?? '?'}, not ${input.id}`,
      );
    const waves =
      input.waves ?? (await sentWaves(store, original, { agent: input.origin.kind === 'agent-undo' }));
    if (waves.flat().length === 0) {
      await this.#takenBack(original.id);
      return undefined;
    }
    const now = this.#deps.now();
    const record = claiming(
      newRollout({
        id: input.id,
        origin: input.origin,
        nodes: [],
        waves,
        rollout: input.options,
        now: now.toISOString(),
      }),
    );
    if (await store.create(record, input.by)) return { record, created: true };
    return { record: (await store.read(record.id)) ?? record, created: false };
  }
}

/** A rollout that sets a version on its nodes as its waves send them: what it never sent does not have it. */
const setsVersion = (origin: RolloutOrigin) =>
  origin.kind === 'upgrade' ||
  origin.kind === 'undo' ||
  origin.kind === 'agent' ||
  origin.kind === 'agent-undo';

/**
 * An upgrade supersedes a halted upgrade of the same module, and an agent upgrade a halted agent
 * upgrade: its version is no longer the one set (`mesh agent upgrade PREVIOUS` after a bad release).
 */
const supersedes = (origin: RolloutOrigin, holder: RolloutRecord) =>
  holder.state === 'halted' &&
  ((origin.kind === 'upgrade' &&
    holder.origin.kind === 'upgrade' &&
    holder.origin.module === origin.module) ||
    (origin.kind === 'agent' && holder.origin.kind === 'agent'));

export function describeOrigin(origin: RolloutOrigin): string {
  switch (origin.kind) {
    case 'push':
      return `push ${origin.node}`;
    case 'behind':
      return 'push --behind';
    case 'on':
      return `push --on ${origin.selector}`;
    case 'upgrade':
      return `upgrade ${origin.module} ${origin.version}`;
    case 'agent':
      return `agent upgrade ${origin.version}`;
    case 'undo':
      return `undo of rollout ${origin.rollout} (${origin.module} back to ${origin.version})`;
    case 'agent-undo':
      return `undo of rollout ${origin.rollout} (agent ${origin.version} back to what each host ran before)`;
  }
}

/** A record as a list shows it. */
export function summaryOf(record: RolloutRecord): RolloutSummary {
  const counts = countsOf(record);
  return {
    id: record.id,
    origin: record.origin,
    state: record.state,
    ...(record.reason ? { reason: record.reason } : {}),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    waves: record.waves.length,
    wave: record.current + 1,
    counts,
    ...(record.state === 'claiming' && record.claims ? { claims: record.claims } : {}),
  };
}
