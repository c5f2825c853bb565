import type { HoldReader } from '../hold/ports.ts';
import type { Declaration } from '../mesh/declaration.ts';
import { type DeclarationChange, diffDeclarations } from '../mesh/declaration-diff.ts';
import type { PushStore } from '../mesh/store.ts';
import { DryRunPushStore } from './dry-run-store.ts';
import type { DeliveryReader, PushOutcome, PushRequest, PushStepsRunner } from './ports.ts';
import { Pusher } from './pusher.ts';
import { pushTaskFunctions } from './steps.ts';

/** One send a push would make: the node, the revision it would get, and what would change in it. */
export type PlannedSend = {
  readonly node: string;
  readonly revision: number;
  /** 0 for the named node, else the flush round it would be sent in. */
  readonly round: number;
  readonly changes: readonly DeclarationChange[];
};

/** What `mesh push --plan` answers: the push contract, each send with its changes; nothing written. */
export type PushPlan = {
  readonly pushed: PlannedSend | null;
  readonly flushed: readonly PlannedSend[];
  readonly rounds: number;
  readonly behind: readonly string[];
  readonly unsendable?: PushOutcome['unsendable'];
  readonly heldBack?: PushOutcome['heldBack'];
};

/**
 * What a push would send, found by running the push's own steps on a store that writes nowhere
 * (DryRunPushStore): the same nodes, rounds and revisions the push would give them, each with
 * the difference between what it was last sent and what it would be sent. A provision the push
 * would mint is shown as a new secret; no secret is minted, and no secret is shown.
 */
export async function planPush(
  request: PushRequest,
  deps: {
    readonly store: PushStore;
    readonly deliveries: DeliveryReader;
    readonly holds?: HoldReader;
    /** The flow's order, run in-process. */
    readonly runSteps: PushStepsRunner;
  },
): Promise<PushPlan> {
  const dry = new DryRunPushStore(deps.store);
  const pusher = new Pusher({
    store: dry,
    mint: { secret: () => 'minted-by-the-push' },
    lastSent: deps.deliveries,
    ...(deps.holds ? { holds: deps.holds } : {}),
  });
  const outcome = await deps.runSteps(pushTaskFunctions(pusher), request);

  const previous = new Map<string, Declaration | undefined>();
  const changes = new Map<string, readonly DeclarationChange[]>();
  for (const send of dry.sends) {
    if (!previous.has(send.node))
      previous.set(
        send.node,
        (await deps.deliveries.readDelivery(send.node))?.declaration as Declaration | undefined,
      );
    const next = JSON.parse(send.canonical) as Declaration;
    changes.set(`${send.node}@${send.revision}`, diffDeclarations(previous.get(send.node), next));
    previous.set(send.node, next);
  }
  const planned = (node: string, revision: number, round: number): PlannedSend => ({
    node,
    revision,
    round,
    changes: changes.get(`${node}@${revision}`) ?? [],
  });
  return {
    pushed: outcome.pushed ? planned(outcome.pushed.node, outcome.pushed.revision, 0) : null,
    flushed: outcome.flushed.map((send) => planned(send.node, send.revision, send.round)),
    rounds: outcome.rounds,
    behind: outcome.behind,
    ...(outcome.unsendable ? { unsendable: outcome.unsendable } : {}),
    ...(outcome.heldBack ? { heldBack: outcome.heldBack } : {}),
  };
}
