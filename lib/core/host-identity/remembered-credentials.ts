import type { NodeCredential, NodeCredentialReader } from './ports.ts';

export type RememberedCredentialsOptions = {
  /** How long a completed enrolment's key is trusted without asking the store again. @default 300_000 */
  readonly ttlMs?: number;
  readonly now?: () => number;
};

/**
 * Remembers the credentials of completed enrolments for a while, as an API Gateway authorizer's
 * cached answer would. This is what lets a host's report reach the queue while the store is
 * away — the queue holds it until the store is back — instead of the host being told to try
 * again. Only a key that its spent enrolment names is remembered; a refusal never is, so a node
 * that just enrolled is seen at once. The price: a node re-enrolled with new keys keeps its old
 * key accepted here for at most the TTL.
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
    const kept = this.remembered.get(key);
    if (kept && kept.until > this.now()) return kept.credential;
    this.remembered.delete(key);
    const credential = await this.reader.readCredential(node, thumbprint);
    if (credential.key && credential.enrolledThumbprint === thumbprint) {
      this.remembered.set(key, { credential, until: this.now() + this.ttlMs });
    }
    return credential;
  }
}
