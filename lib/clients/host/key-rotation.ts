import { readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { possessionType } from '../../server/core/enrolment/rotation.ts';
import { type ApiAnswer, ApiUnreachableError } from '../http/api-client.ts';
import { hostApiClient } from './host-api-client.ts';
import {
  loadNodeKeys,
  loadOrCreateNodeKeys,
  type NodeKeys,
  sealingFile,
  signingFile,
  signingKeyOf,
} from './keys.ts';

/**
 * A host's side of a key rotation. The new keys are written to DIR/next before anything is
 * sent, so a rotation whose answer is lost is run again with the same keys; they replace the
 * keys in DIR only once the control plane has switched to them. Whether it has is asked with
 * the new key itself (a signed fetch of the node's declaration), so a lost answer never leaves
 * the host holding a key the control plane no longer accepts.
 */
export const pendingDir = (dir: string) => join(dir, 'next');

/**
 * Promotion renames the signing key first: DIR/next with only a sealing key left means a
 * promotion was cut short after the identity moved, and finishing it is safe.
 */
export async function settlePromotion(dir: string): Promise<void> {
  const left = await readdir(pendingDir(dir)).catch(() => undefined);
  if (!left || left.includes(signingFile)) return;
  if (left.includes(sealingFile)) await rename(join(pendingDir(dir), sealingFile), join(dir, sealingFile));
  await rm(pendingDir(dir), { recursive: true, force: true });
}

export async function promotePendingKeys(dir: string): Promise<void> {
  await rename(join(pendingDir(dir), signingFile), join(dir, signingFile));
  await settlePromotion(dir);
}

/** The new signing key's proof that it belongs to `node` and replaces `previous`. */
export function possessionProof(node: string, next: NodeKeys, previous: string): Promise<string> {
  return new SignJWT({ previous })
    .setProtectedHeader({ alg: 'EdDSA', typ: possessionType, kid: next.thumbprint })
    .setSubject(node)
    .setIssuedAt()
    .sign(next.signing.privateKey);
}

/** Whether the control plane takes `keys` as the node's key now: anything but a 401 says yes. */
export async function acceptedNow(api: string, node: string, keys: NodeKeys): Promise<boolean> {
  const answer = await hostApiClient(api, signingKeyOf(node, keys)).send(
    'GET',
    `/hosts/${encodeURIComponent(node)}/declaration`,
  );
  if (answer.status === 401) return false;
  if (answer.status === 429 || answer.status >= 500)
    throw new ApiUnreachableError(
      `the control plane said try again (${answer.status})`,
      `http_${answer.status}`,
    );
  return true;
}

/**
 * After the control plane refused the key in DIR: the keys a rotation left waiting in DIR/next,
 * promoted when the control plane takes them (the rotation's answer was lost, or another
 * process rotated), else whatever DIR holds now. The caller compares thumbprints.
 */
export async function keysAfterRefusal(
  dir: string,
  api: string,
  node: string,
): Promise<NodeKeys | undefined> {
  await settlePromotion(dir);
  const pending = await loadNodeKeys(pendingDir(dir));
  if (pending && (await acceptedNow(api, node, pending))) await promotePendingKeys(dir);
  return loadNodeKeys(dir);
}

export type RotationOutcome =
  | { readonly kind: 'rotated'; readonly thumbprint: string; readonly previous: string }
  /** An earlier run's switch went through and its answer was lost; this run only promoted. */
  | { readonly kind: 'finished'; readonly thumbprint: string }
  | { readonly kind: 'refused'; readonly answer: ApiAnswer };

/**
 * `mesh-host rotate`: new keys in DIR/next (or those an earlier run left there), the rotation
 * sent signed with the current key and proven by the new one, the new keys promoted once the
 * control plane answers. ApiUnreachableError when it cannot be asked: the keys wait in DIR/next.
 */
export async function rotateHostKeys(options: {
  readonly dir: string;
  readonly api: string;
  readonly node: string;
  readonly current: NodeKeys;
}): Promise<RotationOutcome> {
  const { dir, api, node, current } = options;
  await settlePromotion(dir);
  const { keys: next, created } = await loadOrCreateNodeKeys(pendingDir(dir));
  if (!created && (await acceptedNow(api, node, next))) {
    await promotePendingKeys(dir);
    return { kind: 'finished', thumbprint: next.thumbprint };
  }
  const answer = await hostApiClient(api, signingKeyOf(node, current)).send(
    'POST',
    `/hosts/${encodeURIComponent(node)}/keys`,
    {
      keys: { signing: next.signing.publicJwk, sealing: next.sealing.publicJwk },
      possession: await possessionProof(node, next, current.thumbprint),
    },
  );
  if (answer.status === 429 || answer.status >= 500)
    throw new ApiUnreachableError(
      `the control plane said try again (${answer.status})`,
      `http_${answer.status}`,
    );
  if (answer.status !== 200) return { kind: 'refused', answer };
  await promotePendingKeys(dir);
  return { kind: 'rotated', thumbprint: next.thumbprint, previous: current.thumbprint };
}
