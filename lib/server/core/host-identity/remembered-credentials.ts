import { StoreUnavailableError } from '../unavailable.ts';
import type { NodeCredential, NodeCredentialReader } from './ports.ts';

export type RememberedCredentialsOptions = {
  /** How long a completed enrolment's key may stand in for the store while it is away. @default 300_000 */
  readonly ttlMs?: number;
  readonly now?: () => number;
};

/**
 * Asks the store for every credential, and remembers the ones of completed enrolments only as a
 * fallback while the store cannot be asked. So a node removed or disenrolled, or enrolled again
 * with new keys, is refused at the next request on every instance; and while the store is away
 * a host whose key was read lately still gets through, so its report reaches the queue (which
 * holds it until the store is back) instead of the host being told to try again. The price of
 * the fallback: during an outage, a key revoked in the last TTL before it is still accepted.
 */
export class RememberedCredentials implements NodeCredentialReader {
  private readonly reader: NodeCredentialReader;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly remembered = new Map<string, { credential: NodeCredential; until: number }>();

  constructor(reader: NodeCredentialReader, options: RememberedCredentialsOptions = {}) {
    this.reader = reader;
    this.ttlMs = options.ttlMs ?? 300_000;
    this.now = options.now ?? Date.now;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    const key = `${node}\u0000${thumbprint}`;
    let credential: NodeCredential;
    try {
      credential = await this.reader.readCredential(node, thumbprint);
    } catch (error) {
      const kept = this.remembered.get(key);
      if (error instanceof StoreUnavailableError && kept && kept.until > this.now()) return kept.credential;
      throw error;
    }
    if (credential.key && credential.enrolledThumbprint === thumbprint) {
      this.remembered.set(key, { credential, until: this.now() + this.ttlMs });
    } else {
      this.remembered.delete(key);
    }
    return credential;
  }
}
