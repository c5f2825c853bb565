import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadOrCreateNodeKeys } from '../../lib/clients/host/keys.ts';
import { SealedSecretRefusedError } from '../../lib/server/core/sealing/errors.ts';
import {
  fingerprintOf,
  openSealed,
  relationOf,
  type SealBinding,
  sealSecret,
} from '../../lib/server/core/sealing/sealed-secret.ts';

async function nodeSealingKeys() {
  const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  return { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey) };
}

const relation = relationOf({
  consumerNode: 'web1',
  consumerModule: 'nginx',
  providerNode: 'broker',
  providerModule: 'rabbit',
});
const consumerSide: SealBinding = { node: 'web1', side: 'consumer', relation, generation: 'g1' };
const secret = 'YIvaaH-WO5mIRpzgqmRHvIsAsizyLlIu';

describe('a secret sealed to a node’s sealing key', () => {
  it('opens with that node’s private key where it belongs, and holds the secret nowhere in clear', async () => {
    const web1 = await nodeSealingKeys();

    const sealed = await sealSecret(secret, web1.publicJwk, consumerSide);

    expect(sealed).not.toContain(secret);
    for (const part of sealed.split('.'))
      expect(Buffer.from(part, 'base64url').toString('latin1')).not.toContain(secret);
    // A grant's 32-character secret grows by about 80 bytes sealed (a provider with 10,000 grants: 0.8 MB).
    expect(sealed.length).toBeLessThan(128);
    expect(await openSealed(sealed, web1.privateKey, consumerSide)).toBe(secret);
  });

  it('opens with the private key a host keeps on disk, sealed to the public key it enrols', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mesh-sealing-'));
    try {
      const { keys } = await loadOrCreateNodeKeys(dir);
      const reloaded = await loadOrCreateNodeKeys(dir);
      const sealed = await sealSecret(secret, keys.sealing.publicJwk, consumerSide);

      expect(reloaded.created).toBe(false);
      expect(await openSealed(sealed, reloaded.keys.sealing.privateKey, consumerSide)).toBe(secret);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('seals anew each time: two copies of one secret are not the same text', async () => {
    const web1 = await nodeSealingKeys();

    const [one, two] = await Promise.all([
      sealSecret(secret, web1.publicJwk, consumerSide),
      sealSecret(secret, web1.publicJwk, consumerSide),
    ]);

    expect(one).not.toBe(two);
  });

  it.each([
    ['another node’s partition', { node: 'web2' }],
    ['the other side of the relation', { side: 'provider' as const }],
    [
      'another relation of the same node',
      {
        relation: relationOf({
          consumerNode: 'web1',
          consumerModule: 'nginx',
          providerNode: 'db1',
          providerModule: 'pg',
        }),
      },
    ],
    ['another generation', { generation: 'g2' }],
  ])('does not open when moved to %s, and says why', async (_where, moved) => {
    const web1 = await nodeSealingKeys();
    const sealed = await sealSecret(secret, web1.publicJwk, consumerSide);

    const opening = openSealed(sealed, web1.privateKey, { ...consumerSide, ...moved });

    await expect(opening).rejects.toBeInstanceOf(SealedSecretRefusedError);
    await expect(opening).rejects.toThrow(/was sealed for another node, side, relation or generation/);
  });

  it('does not open with another node’s key (the old key after a rotation among them)', async () => {
    const [web1, rotated] = await Promise.all([nodeSealingKeys(), nodeSealingKeys()]);
    const sealed = await sealSecret(secret, rotated.publicJwk, consumerSide);

    await expect(openSealed(sealed, web1.privateKey, consumerSide)).rejects.toThrow(
      /does not open with this node's sealing key/,
    );
  });

  it('does not open when moved and its tag rewritten to name where it was moved', async () => {
    const web1 = await nodeSealingKeys();
    const sealed = await sealSecret(secret, web1.publicJwk, consumerSide);
    const moved = { ...consumerSide, generation: 'g2' };
    const [, tagOfMoved] = (await sealSecret('other', web1.publicJwk, moved)).split('.');
    const [form, , enc, ciphertext] = sealed.split('.');

    await expect(
      openSealed([form, tagOfMoved, enc, ciphertext].join('.'), web1.privateKey, moved),
    ).rejects.toThrow(/does not open with this node's sealing key/);
  });

  it('is told apart from another by a keyed fingerprint that holds neither secret', () => {
    const key = new Uint8Array(32).fill(7);

    const one = fingerprintOf(secret, key);

    expect(one).toMatch(/^hmac-sha256:[A-Za-z0-9_-]{12}$/);
    expect(fingerprintOf(secret, key)).toBe(one);
    expect(fingerprintOf(`${secret}x`, key)).not.toBe(one);
    expect(fingerprintOf(secret, new Uint8Array(32).fill(8))).not.toBe(one);
  });
});
