import { beforeAll, describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { enrol } from '../../lib/server/core/enrolment/enrol.ts';
import { TokenConditionFailedError } from '../../lib/server/core/enrolment/errors.ts';
import { type PresentedKeys, presenterOf } from '../../lib/server/core/enrolment/keys.ts';
import type { TokenStore } from '../../lib/server/core/enrolment/ports.ts';
import { parseToken } from '../../lib/server/core/enrolment/token.ts';
import { issueToken } from '../../lib/server/core/enrolment/tokens.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture, presenterKeys } from './enrol-fixtures.ts';

let fixture: ReturnType<typeof enrolmentFixture>;

beforeAll(async () => {
  const config: MeshConfig = await provisionTestResources('enrolrecover');
  fixture = enrolmentFixture(config);
});

let counter = 0;
async function nodeWithToken(ttlSeconds = 3600) {
  counter += 1;
  const node = `recover-${counter}`;
  await fixture.addNode(node);
  const issued = await issueToken(
    node,
    ttlSeconds,
    { tokens: fixture.tokens, now: fixture.now },
    localActor(),
  );
  return { node, token: issued.token };
}

const deps = (tokens: TokenStore = fixture.tokens) => ({ tokens, keys: fixture.keys, now: fixture.now });

/** The node's key items (thumbprints) and the thumbprint its enrolment names. */
async function keysOf(node: string) {
  const keys = (await fixture.scan('identity')).filter(
    (item) => item.pk === `node#${node}` && String(item.sk).startsWith('key#'),
  );
  const enrolment = (await fixture.scan('inventory')).find(
    (item) => item.pk === `node#${node}` && item.sk === 'enrolment',
  );
  return { stored: keys.map((item) => item.thumbprint).sort(), enrolled: enrolment?.thumbprint };
}

async function reEnrolWithNewToken(node: string, keys: PresentedKeys) {
  const { token } = await issueToken(node, 3600, { tokens: fixture.tokens, now: fixture.now }, localActor());
  return enrol({ by: localActor(), node, token, keys }, deps());
}

describe('a lost answer recovered after the node was enrolled again with a newer token', () => {
  it('is told "revoked" and leaves the newer enrolment\'s key alone', async () => {
    const { node, token } = await nodeWithToken();
    const first = await presenterKeys();
    const second = await presenterKeys();
    await enrol({ by: localActor(), node, token, keys: first }, deps());
    // The first host's answer is lost; before its retry gets past the claim, the operator
    // issues a new token and a second host enrols with it.
    const racing: TokenStore = {
      ...fixture.tokens,
      read: (n) => fixture.tokens.read(n),
      issue: (t, p) => fixture.tokens.issue(t, p, localActor()),
      revoke: (n, at) => fixture.tokens.revoke(n, at, localActor()),
      spend: (request) => fixture.tokens.spend(request),
      claim: async (request) => {
        try {
          return await fixture.tokens.claim(request);
        } catch (error) {
          if (error instanceof TokenConditionFailedError) await reEnrolWithNewToken(node, second);
          throw error;
        }
      },
    };

    const retry = enrol({ by: localActor(), node, token, keys: first }, deps(racing));

    await expect(retry).rejects.toMatchObject({ name: 'TokenRefusedError', reason: 'revoked' });
    const { thumbprint } = await presenterOf(second);
    expect(await keysOf(node)).toEqual({ stored: [thumbprint], enrolled: thumbprint });
  });

  it('never prunes a key put for a newer token, spent or only claimed', async () => {
    const { node, token } = await nodeWithToken();
    const first = await presenterKeys();
    const second = await presenterKeys();
    const third = await presenterKeys();
    const { tokenId } = parseToken(token);
    const { thumbprint: firstThumbprint } = await presenterOf(first);
    await enrol({ by: localActor(), node, token, keys: first }, deps());
    await reEnrolWithNewToken(node, second);
    // A third host claims a yet newer token and puts its keys, but has not spent it yet.
    const { token: newest } = await issueToken(
      node,
      3600,
      { tokens: fixture.tokens, now: fixture.now },
      localActor(),
    );
    const newestParsed = parseToken(newest);
    const { thumbprint: thirdThumbprint, presenter } = await presenterOf(third);
    await fixture.tokens.claim({
      node,
      ...newestParsed,
      presenter,
      nowMs: fixture.clock.ms,
      leaseUntilMs: fixture.clock.ms + 30_000,
    });
    await fixture.keys.putKeys({
      node,
      thumbprint: thirdThumbprint,
      signingKey: third.signing,
      sealingKey: third.sealing,
      presenter,
      storedAt: fixture.now().toISOString(),
      tokenId: newestParsed.tokenId,
    });
    const { thumbprint: secondThumbprint } = await presenterOf(second);

    // The first enrolment's prune, arriving late.
    await fixture.keys.pruneOtherKeys(node, firstThumbprint, [tokenId]);

    expect((await keysOf(node)).stored).toEqual([secondThumbprint, thirdThumbprint].sort());
  });

  it('still prunes the keys of the token it replaced and of the presenters that lost its claim', async () => {
    const { node, token } = await nodeWithToken();
    const first = await presenterKeys();
    const loser = await presenterKeys();
    const second = await presenterKeys();
    const { tokenId } = parseToken(token);
    const { thumbprint: loserThumbprint, presenter } = await presenterOf(loser);
    await fixture.keys.putKeys({
      node,
      thumbprint: loserThumbprint,
      signingKey: loser.signing,
      sealingKey: loser.sealing,
      presenter,
      storedAt: fixture.now().toISOString(),
      tokenId,
    });
    await enrol({ by: localActor(), node, token, keys: first }, deps());

    await reEnrolWithNewToken(node, second);

    const { thumbprint } = await presenterOf(second);
    expect(await keysOf(node)).toEqual({ stored: [thumbprint], enrolled: thumbprint });
  });
});

describe('a token that expires while its claimant waits for the store', () => {
  it('is spent by that claimant on its retry within the lease, and refused to anyone else as expired', async () => {
    const { node, token } = await nodeWithToken(60);
    let spendFails = true;
    const flaky: TokenStore = {
      read: (n) => fixture.tokens.read(n),
      issue: (t, p) => fixture.tokens.issue(t, p, localActor()),
      revoke: (n, at) => fixture.tokens.revoke(n, at, localActor()),
      claim: (request) => fixture.tokens.claim(request),
      spend: async (request) => {
        if (spendFails)
          throw new StoreUnavailableError('the inventory table', {
            cause: new Error('connect ECONNREFUSED'),
          });
        return fixture.tokens.spend(request);
      },
    };
    const keys = await presenterKeys();
    fixture.clock.ms += 59_500;

    const first = enrol({ by: localActor(), node, token, keys }, deps(flaky));
    await expect(first).rejects.toBeInstanceOf(StoreUnavailableError);
    spendFails = false;
    fixture.clock.ms += 2_000;
    const other = await enrol({ by: localActor(), node, token, keys: await presenterKeys() }, deps()).catch(
      (error) => error,
    );
    const retry = await enrol({ by: localActor(), node, token, keys }, deps(flaky));

    expect(other).toMatchObject({ name: 'TokenRefusedError', reason: 'expired' });
    expect(retry.thumbprint).toBe((await presenterOf(keys)).thumbprint);
  });

  it('is refused as expired to its own claimant once the lease has lapsed too', async () => {
    const { node, token } = await nodeWithToken(60);
    const keys = await presenterKeys();
    const { presenter } = await presenterOf(keys);
    const { tokenId, secretHash } = parseToken(token);
    fixture.clock.ms += 50_000;
    await fixture.tokens.claim({
      node,
      tokenId,
      secretHash,
      presenter,
      nowMs: fixture.clock.ms,
      leaseUntilMs: fixture.clock.ms + 30_000,
    });
    fixture.clock.ms += 31_000;

    const late = enrol({ by: localActor(), node, token, keys }, deps());

    await expect(late).rejects.toMatchObject({ name: 'TokenRefusedError', reason: 'expired' });
  });
});
