import { exportJWK, generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { SealedDeclarationOpener } from '../../lib/clients/host/agent/declaration-opener.ts';
import { openSealed, relationOf, sealSecret } from '../../lib/server/core/sealing/sealed-secret.ts';

async function sealingKeys() {
  const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  return { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey) };
}

const toBroker = relationOf({
  consumerNode: 'web1',
  consumerModule: 'nginx',
  providerNode: 'broker',
  providerModule: 'rabbit',
});
const fromWeb2 = relationOf({
  consumerNode: 'web2',
  consumerModule: 'app',
  providerNode: 'web1',
  providerModule: 'cache',
});

/** web1: nginx consumes broker/rabbit, and web1's cache is consumed by web2/app. */
async function declarationOfWeb1(keys: { publicJwk: Parameters<typeof sealSecret>[1] }, generation = 'g1') {
  return {
    node: 'web1',
    modules: [
      { name: 'nginx', version: null, provides: null },
      { name: 'cache', version: '2', provides: 'redis' },
    ],
    provisions: [
      {
        module: 'nginx',
        provider: { node: 'broker', module: 'rabbit', kind: 'amqp' },
        resource: 'web1-nginx',
        user: 'web1-nginx',
        fingerprint: 'hmac-sha256:aaaaaaaaaaaa',
        generation,
        sealed: await sealSecret('consumer-secret', keys.publicJwk, {
          node: 'web1',
          side: 'consumer',
          relation: toBroker,
          generation,
        }),
      },
    ],
    grants: [
      {
        module: 'cache',
        kind: 'redis',
        consumer: { node: 'web2', module: 'app' },
        resource: 'web2-app',
        user: 'web2-app',
        fingerprint: 'hmac-sha256:bbbbbbbbbbbb',
        generation,
        sealed: await sealSecret('provider-secret', keys.publicJwk, {
          node: 'web1',
          side: 'provider',
          relation: fromWeb2,
          generation,
        }),
      },
    ],
  };
}

describe('the host opens its sealed secrets before the hook sees the declaration', () => {
  it('hands on today’s shape: `secret` in clear in each provision and grant, the rest as it came', async () => {
    const keys = await sealingKeys();
    const declaration = await declarationOfWeb1(keys);

    const opened = await new SealedDeclarationOpener('web1', () => keys.privateKey).open(
      JSON.stringify(declaration),
    );

    expect(opened.ok).toBe(true);
    const body = JSON.parse((opened as { body: string }).body);
    expect(body.provisions[0]).toEqual({
      module: 'nginx',
      provider: { node: 'broker', module: 'rabbit', kind: 'amqp' },
      resource: 'web1-nginx',
      user: 'web1-nginx',
      fingerprint: 'hmac-sha256:aaaaaaaaaaaa',
      generation: 'g1',
      secret: 'consumer-secret',
    });
    expect(body.grants[0]).toMatchObject({
      consumer: { node: 'web2', module: 'app' },
      secret: 'provider-secret',
    });
    expect(body.modules).toEqual(declaration.modules);
  });

  it('opens a copy once: the next declaration opens only the copies that are new to it, and a new key opens all again', async () => {
    const [keys, rotated] = await Promise.all([sealingKeys(), sealingKeys()]);
    let key = keys.privateKey;
    const opened: string[] = [];
    const opener = new SealedDeclarationOpener(
      'web1',
      () => key,
      (sealed, with_, binding) => {
        opened.push(binding.side);
        return openSealed(sealed, with_, binding);
      },
    );
    const first = await declarationOfWeb1(keys);
    const secretsOf = async (declaration: object) =>
      JSON.parse(((await opener.open(JSON.stringify(declaration))) as { body: string }).body);

    const once = await secretsOf(first);
    const unchanged = await secretsOf({
      ...first,
      modules: [...first.modules, { name: 'extra', version: null, provides: null }],
    });
    const openedUnchanged = opened.length;
    const regrantedDeclaration = { ...first, grants: (await declarationOfWeb1(keys, 'g2')).grants };
    const regranted = await secretsOf(regrantedDeclaration);
    const openedRegranted = opened.length;
    key = rotated.privateKey;
    const rotatedAway = await opener.open(JSON.stringify(regrantedDeclaration));

    expect(once.provisions[0].secret).toBe('consumer-secret');
    expect(unchanged.provisions[0].secret).toBe('consumer-secret');
    expect(unchanged.grants[0].secret).toBe('provider-secret');
    expect(openedUnchanged).toBe(2);
    expect(regranted.grants[0]).toMatchObject({ generation: 'g2', secret: 'provider-secret' });
    expect(openedRegranted).toBe(3);
    // The old key's secrets are not handed out once the key is gone: the copies are opened again, and refused.
    expect(rotatedAway.ok).toBe(false);
  });

  it('hands on a declaration with nothing sealed byte for byte', async () => {
    const keys = await sealingKeys();
    const body = JSON.stringify({ node: 'web1', modules: [], provisions: [], grants: [] });

    expect(await new SealedDeclarationOpener('web1', () => keys.privateKey).open(body)).toEqual({
      ok: true,
      body,
    });
  });

  it('refuses the declaration when a copy was moved to another node, naming where it was found', async () => {
    const keys = await sealingKeys();
    const ofWeb1 = JSON.stringify(await declarationOfWeb1(keys));

    const opened = await new SealedDeclarationOpener('web3', () => keys.privateKey).open(ofWeb1);

    expect(opened).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /consumer web3 of web3\/nginx->broker\/rabbit .* sealed for another node/,
      ),
    });
  });

  it('refuses a copy whose generation was rewritten, and one sealed to a key this node no longer holds', async () => {
    const [keys, rotated] = await Promise.all([sealingKeys(), sealingKeys()]);
    const declaration = await declarationOfWeb1(keys);
    const regenerated = {
      ...declaration,
      provisions: declaration.provisions.map((provision) => ({ ...provision, generation: 'g2' })),
    };

    const moved = await new SealedDeclarationOpener('web1', () => keys.privateKey).open(
      JSON.stringify(regenerated),
    );
    const oldKey = await new SealedDeclarationOpener('web1', () => rotated.privateKey).open(
      JSON.stringify(declaration),
    );

    expect(moved).toMatchObject({ ok: false, reason: expect.stringContaining('(generation g2)') });
    expect(oldKey).toMatchObject({
      ok: false,
      reason: expect.stringContaining("does not open with this node's sealing key"),
    });
    expect(JSON.stringify([moved, oldKey])).not.toMatch(/consumer-secret|provider-secret/);
  });
});
