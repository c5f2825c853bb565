/**
 * Nodes enrolled before the spend kept the sealing key on the inventory's enrolment item: their
 * enrolment names a signing key (its thumbprint) and keeps no sealing key, so composing finds
 * none and their relations wait. Their host enrolled an X25519 key all the same, stored in the
 * identity table beside the signing key it named (`key#<thumbprint>`). What a store offers to
 * copy it where composing reads it.
 */
export interface SealingKeysFromBefore {
  /** Completed enrolments that name a signing key and keep no sealing key. */
  enrolledWithoutSealingKey(): Promise<ReadonlyArray<EnrolledKey>>;
  /**
   * The sealing key each node's enrolment stored beside the signing key it names, by node; a
   * node whose identity no longer names that signing key as enrolled (rotated, disenrolled) or
   * holds no sealing key for it is left out.
   */
  storedSealingKeys(enrolled: ReadonlyArray<EnrolledKey>): Promise<ReadonlyMap<string, SealingKeyJwk>>;
  /**
   * Keeps `key` on the node's enrolment item, only if it still names `thumbprint` and keeps no
   * sealing key; false when it moved meanwhile (a rotation or a new enrolment wrote its own).
   */
  recordSealingKey(node: string, thumbprint: string, key: SealingKeyJwk): Promise<boolean>;
  /** Whether a run went through every enrolment once: none written since can lack a key. */
  done(): Promise<boolean>;
  /** Notes that a run went through every enrolment. */
  markDone(at: string): Promise<void>;
}

/** A node's public X25519 key, as its enrolment keeps it. */
export type SealingKeyJwk = { readonly kty: 'OKP'; readonly crv: 'X25519'; readonly x: string };

export type EnrolledKey = { readonly node: string; readonly thumbprint: string };

export type KeysFromBeforeOutcome = {
  /** Nodes whose sealing key is now kept on their enrolment, each followed by `enrolled:<node>`. */
  readonly recorded: readonly string[];
  /** Nodes whose identity holds no sealing key for their enrolled signing key: they wait for `mesh-host rotate`. */
  readonly keyless: readonly string[];
  /** Nodes whose enrolment changed while this ran: their new enrolment keeps its own key. */
  readonly moved: readonly string[];
};

/**
 * Copies each such node's stored sealing key onto its enrolment and announces it the way a
 * completed enrolment does (`enrolled:<node>` on the control queue), so the control plane mints
 * and delivers the relations that waited for it, both sides, with no act per host. Idempotent:
 * a node recorded once is no longer listed, and a second run finds nothing.
 */
export async function recordSealingKeysFromBefore(deps: {
  readonly store: SealingKeysFromBefore;
  readonly announce: (node: string) => Promise<void>;
  readonly now?: () => Date;
}): Promise<KeysFromBeforeOutcome> {
  // Every enrolment since sealing keeps its key, so once a run has gone through them all the
  // next start costs one read, not a Scan of the mesh.
  if (await deps.store.done()) return { recorded: [], keyless: [], moved: [] };
  const outcome = await recordEach(deps, await deps.store.enrolledWithoutSealingKey());
  await deps.store.markDone((deps.now ?? (() => new Date()))().toISOString());
  return outcome;
}

async function recordEach(
  deps: { readonly store: SealingKeysFromBefore; readonly announce: (node: string) => Promise<void> },
  enrolled: readonly EnrolledKey[],
): Promise<KeysFromBeforeOutcome> {
  if (enrolled.length === 0) return { recorded: [], keyless: [], moved: [] };
  const stored = await deps.store.storedSealingKeys(enrolled);
  const recorded: string[] = [];
  const keyless: string[] = [];
  const moved: string[] = [];
  for (const { node, thumbprint } of enrolled) {
    const key = stored.get(node);
    if (!key) {
      keyless.push(node);
      continue;
    }
    if (!(await deps.store.recordSealingKey(node, thumbprint, key))) {
      moved.push(node);
      continue;
    }
    await deps.announce(node);
    recorded.push(node);
  }
  return { recorded, keyless, moved };
}

/** What a run did, for the operator: the nodes recorded, and those left to `mesh-host rotate`. */
export function keysFromBeforeLine(outcome: KeysFromBeforeOutcome): string {
  const named = (nodes: readonly string[]) =>
    `${nodes.slice(0, 10).join(', ')}${nodes.length > 10 ? ` and ${nodes.length - 10} more` : ''}`;
  return [
    outcome.recorded.length > 0
      ? `sealing keys of ${outcome.recorded.length} nodes enrolled before sealing recorded, their relations minted: ${named(outcome.recorded)}`
      : '',
    outcome.keyless.length > 0
      ? `${outcome.keyless.length} nodes enrolled with no sealing key stored wait for mesh-host rotate: ${named(outcome.keyless)}`
      : '',
  ]
    .filter(Boolean)
    .join('; ');
}
