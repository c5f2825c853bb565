import type { JWK } from 'jose';

/** A node's public keys as the identity table keeps them. */
export type NodeKeyRecord = {
  readonly node: string;
  readonly thumbprint: string;
  readonly signingKey: JWK;
  readonly sealingKey: JWK;
};

/** What the verifier reads for one node and one key: both come back from one round trip. */
export type NodeCredential = {
  /** The identity table's record of that key, if any attempt ever stored it. */
  readonly key: NodeKeyRecord | undefined;
  /** The thumbprint the completed (spent) enrolment names; undefined until the token is spent. */
  readonly enrolledThumbprint: string | undefined;
};

/** Whether the credential read for `thumbprint` is that key, named by a completed enrolment. */
export function namesEnrolledKey(credential: NodeCredential, thumbprint: string): boolean {
  return (
    credential.key !== undefined &&
    credential.key.thumbprint === thumbprint &&
    credential.enrolledThumbprint === thumbprint
  );
}

export interface NodeCredentialReader {
  readCredential(node: string, thumbprint: string): Promise<NodeCredential>;
}

/** Remembers proof ids; false when the id was already seen (a replay). */
export interface ProofReplayGuard {
  rememberOnce(node: string, jti: string, forgetAfterEpochSeconds: number): Promise<boolean>;
}
