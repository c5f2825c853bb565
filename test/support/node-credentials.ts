import type { NodeKeys } from '../../lib/clients/host/keys.ts';
import type {
  NodeCredential,
  NodeCredentialReader,
  ProofReplayGuard,
} from '../../lib/server/core/host-identity/ports.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';

/**
 * The identity store as host authentication reads it, in memory: the keys each node presented
 * and the thumbprint its spent enrolment names. It can be taken away, and counts its reads.
 */
export class InMemoryNodeCredentials implements NodeCredentialReader {
  readonly keys = new Map<string, NodeKeys>();
  readonly enrolled = new Map<string, string>();
  unavailable = false;
  reads = 0;

  /** Stores the node's keys; `spent: false` leaves them as an attempt that never spent its token. */
  enrol(node: string, keys: NodeKeys, options: { spent?: boolean } = {}): this {
    this.keys.set(node, keys);
    if (options.spent ?? true) this.enrolled.set(node, keys.thumbprint);
    return this;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    this.reads += 1;
    if (this.unavailable)
      throw new StoreUnavailableError('reading node keys', { cause: new Error('connection refused') });
    const keys = this.keys.get(node);
    return {
      key:
        keys && keys.thumbprint === thumbprint
          ? { node, thumbprint, signingKey: keys.signing.publicJwk, sealingKey: keys.sealing.publicJwk }
          : undefined,
      enrolledThumbprint: this.enrolled.get(node),
    };
  }
}

/** The proof replay guard in memory: each node's proof ids, once. It can be taken away. */
export class InMemoryReplayGuard implements ProofReplayGuard {
  readonly seen = new Set<string>();
  unavailable = false;

  async rememberOnce(node: string, jti: string): Promise<boolean> {
    if (this.unavailable)
      throw new StoreUnavailableError('the inventory table', { cause: new Error('connection refused') });
    const key = `${node}#${jti}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }
}
