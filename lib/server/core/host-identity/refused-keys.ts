import { type NodeCredential, type NodeCredentialReader, namesEnrolledKey } from './ports.ts';

export type RefusedKeysOptions = {
  /** How long a refused key is refused without asking the store. @default 15_000 */
  readonly ttlMs?: number;
  /** How many refused keys are remembered at most; the oldest is forgotten first. @default 10_000 */
  readonly capacity?: number;
  readonly now?: () => number;
};

const refusal: NodeCredential = { key: undefined, enrolledThumbprint: undefined };

/**
 * Remembers, for a short while, the keys the store said no completed enrolment names, and
 * answers them again as unknown without asking it: a flood of fresh proofs made with one key
 * nobody enrolled costs one read per instance per TTL rather than one per request. Keys the
 * store knows are asked for on every request, so a revoked key is refused at once.
 *
 * What the TTL costs: a key refused in the TTL before its enrolment completed is refused for the
 * rest of it. A host only signs with its key after its enrolment answered, so that is a host
 * disenrolled and enrolled again with the same keys while it kept asking, which waits at most
 * the TTL.
 */
export class RefusedKeys implements NodeCredentialReader {
  private readonly reader: NodeCredentialReader;
  private readonly ttlMs: number;
  private readonly capacity: number;
  private readonly now: () => number;
  /** Insertion order is age order: the first entry is the oldest. */
  private readonly refused = new Map<string, number>();

  constructor(reader: NodeCredentialReader, options: RefusedKeysOptions = {}) {
    this.reader = reader;
    this.ttlMs = options.ttlMs ?? 15_000;
    this.capacity = Math.max(1, options.capacity ?? 10_000);
    this.now = options.now ?? Date.now;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    const key = `${node}\u0000${thumbprint}`;
    const until = this.refused.get(key);
    if (until !== undefined && until > this.now()) return refusal;
    this.refused.delete(key);
    const credential = await this.reader.readCredential(node, thumbprint);
    if (!namesEnrolledKey(credential, thumbprint)) this.remember(key);
    return credential;
  }

  private remember(key: string): void {
    while (this.refused.size >= this.capacity) {
      const oldest = this.refused.keys().next().value;
      if (oldest === undefined) break;
      this.refused.delete(oldest);
    }
    this.refused.set(key, this.now() + this.ttlMs);
  }
}
