import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import * as z from 'zod';
import type { Actor } from '../audit/record.ts';
import { EnrolmentMovedError, KeyRotationRefusedError } from './errors.ts';
import { type PresentedKeys, presenterOf, publicKeys } from './keys.ts';
import type { KeyRotationStore, NodeKeyStore } from './ports.ts';

/** The JWS `typ` of a possession proof: what the new signing key signs for its node. */
export const possessionType = 'mesh-key-possession+jwt';
const maxSkewSeconds = 60;

/** `POST /hosts/{node}/keys`: the new public keys and the new signing key's possession proof. */
export const rotationBody = z.object({ keys: publicKeys, possession: z.string().min(1).max(2048) }).strict();

export type RotationRequest = {
  readonly node: string;
  /** The thumbprint of the key the request was proven with: the one being replaced. */
  readonly previous: string;
  readonly keys: PresentedKeys;
  readonly possession: string;
  /** Where the request came from, for the rotation's audit record. */
  readonly by: Actor;
};

export type Rotated = {
  readonly node: string;
  readonly thumbprint: string;
  readonly previous: string;
  readonly rotatedAt: string;
  /** True when the enrolment named the new key already: an earlier answer was lost. */
  readonly again: boolean;
};

export type RotationDeps = {
  readonly keys: NodeKeyStore;
  readonly rotation: KeyRotationStore;
  readonly now?: () => Date;
};

const possessionClaims = z.object({ sub: z.string(), previous: z.string(), iat: z.number() });

/**
 * Replaces a node's keys with the same discipline as enrolment: nothing a lost answer strands.
 *
 * 1. The new signing key proves possession: a JWS by it naming the node and the key it
 *    replaces, so the proof cannot be used for another node or after the switch.
 * 2. The new keys are written to the identity table, marked with the token the node enrolled
 *    with (so a later enrolment's prune still finds them). They are not a credential yet.
 * 3. The switch: one transaction moves the enrolment and the spent token from the old key to
 *    the new one, conditional on both still naming the old key. From here the new key works
 *    and the old one is refused; an enrolment retried with the old keys is refused too, as the
 *    token is no longer spent by them.
 * 4. The old key item is pruned.
 *
 * Run again after a lost answer with the old key, it repeats 2–4 (the switch finds itself
 * done); the host's own recovery is to try the new key first (lib/clients/host/key-rotation.ts).
 */
export async function rotateNodeKeys(request: RotationRequest, deps: RotationDeps): Promise<Rotated> {
  const now = deps.now ?? (() => new Date());
  const { thumbprint, presenter } = await presenterOf(request.keys);
  await verifyPossession(request, thumbprint, now());
  if (thumbprint === request.previous)
    throw new KeyRotationRefusedError('possession', 'the new signing key is the one it replaces');

  const enrolment = await deps.rotation.readEnrolment(request.node);
  if (!enrolment) throw new KeyRotationRefusedError('not_enrolled', `node ${request.node} is not enrolled`);
  const again = enrolment.thumbprint === thumbprint;
  if (!again && enrolment.thumbprint !== request.previous)
    throw new KeyRotationRefusedError(
      'moved',
      `node ${request.node}'s enrolment changed since this request was proven; run the rotation again`,
    );

  const rotatedAt = now().toISOString();
  await deps.keys.putKeys({
    node: request.node,
    thumbprint,
    signingKey: request.keys.signing,
    sealingKey: request.keys.sealing,
    presenter,
    storedAt: rotatedAt,
    tokenId: enrolment.tokenId,
  });
  if (!again) {
    try {
      await deps.rotation.switchKeys({
        node: request.node,
        tokenId: enrolment.tokenId,
        from: { thumbprint: enrolment.thumbprint, presenter: enrolment.presenter },
        to: { thumbprint, presenter, sealingKey: request.keys.sealing },
        rotatedAt,
        by: request.by,
      });
    } catch (error) {
      if (!(error instanceof EnrolmentMovedError)) throw error;
      if (error.current?.thumbprint !== thumbprint)
        throw new KeyRotationRefusedError(
          'moved',
          `node ${request.node}'s enrolment changed during the rotation; run the rotation again`,
          { cause: error },
        );
    }
  }
  await deps.keys.pruneOtherKeys(request.node, thumbprint, [enrolment.tokenId]);
  return { node: request.node, thumbprint, previous: request.previous, rotatedAt, again };
}

async function verifyPossession(request: RotationRequest, thumbprint: string, now: Date): Promise<void> {
  const refused = (message: string, cause?: unknown) =>
    new KeyRotationRefusedError('possession', `the new key's possession proof ${message}`, { cause });
  try {
    if (decodeProtectedHeader(request.possession).kid !== thumbprint)
      throw refused('names another key id than the new signing key');
    const key = await importJWK(request.keys.signing, 'EdDSA');
    const { payload } = await jwtVerify(request.possession, key, {
      algorithms: ['EdDSA'],
      typ: possessionType,
      subject: request.node,
      currentDate: now,
      maxTokenAge: maxSkewSeconds,
      clockTolerance: maxSkewSeconds,
    });
    const claims = possessionClaims.parse(payload);
    if (claims.previous !== request.previous) throw refused('names another key to replace');
  } catch (error) {
    if (error instanceof KeyRotationRefusedError) throw error;
    throw refused('does not verify against the new signing key', error);
  }
}
