import { beforeAll, describe, expect, it } from 'vitest';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { enrol } from '../../lib/server/core/enrolment/enrol.ts';
import {
  TokenConditionFailedError,
  TokenHeldError,
  TokenRefusedError,
} from '../../lib/server/core/enrolment/errors.ts';
import { presenterOf } from '../../lib/server/core/enrolment/keys.ts';
import { parseToken } from '../../lib/server/core/enrolment/token.ts';
import { issueToken, revokeToken } from '../../lib/server/core/enrolment/tokens.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture, presenterKeys } from './enrol-fixtures.ts';

let config: MeshConfig;
let fixture: ReturnType<typeof enrolmentFixture>;

beforeAll(async () => {
  config = await provisionTestResources('enrol');
  fixture = enrolmentFixture(config, makeDynamoDBClient(config));
});

let counter = 0;
async function nodeWithToken(ttlSeconds = 3600) {
  counter += 1;
  const node = `node-${counter}`;
  await fixture.addNode(node);
  const issued = await issueToken(
    node,
    ttlSeconds,
    { tokens: fixture.tokens, now: fixture.now },
    localActor(),
  );
  return { node, token: issued.token };
}

const deps = () => ({ tokens: fixture.tokens, keys: fixture.keys, now: fixture.now, leaseSeconds: 30 });

async function claimAs(node: string, token: string, keys: Awaited<ReturnType<typeof presenterKeys>>) {
  const { presenter } = await presenterOf(keys);
  const { tokenId, secretHash } = parseToken(token);
  const nowMs = fixture.clock.ms;
  await fixture.tokens.claim({ node, tokenId, secretHash, presenter, nowMs, leaseUntilMs: nowMs + 30_000 });
  return presenter;
}

describe('enrolment against DynamoDB Local', () => {
  it('holds the claim to one presenter: another is told to try again after the lease left', async () => {
    const { node, token } = await nodeWithToken();
    await claimAs(node, token, await presenterKeys());
    fixture.clock.ms += 12_000;

    const attempt = enrol({ by: localActor(), node, token, keys: await presenterKeys() }, deps());

    await expect(attempt).rejects.toBeInstanceOf(TokenHeldError);
    await expect(attempt).rejects.toMatchObject({ retryAfterSeconds: 18 });
  });

  it('lets another presenter take the claim once it lapses, and then refuses the first one as spent', async () => {
    const { node, token } = await nodeWithToken();
    const first = await presenterKeys();
    await claimAs(node, token, first);
    fixture.clock.ms += 31_000;
    const second = await presenterKeys();

    const enrolled = await enrol({ by: localActor(), node, token, keys: second }, deps());
    const late = enrol({ by: localActor(), node, token, keys: first }, deps());

    expect(enrolled.thumbprint).toBe((await presenterOf(second)).thumbprint);
    await expect(late).rejects.toMatchObject({ name: 'TokenRefusedError', reason: 'spent' });
  });

  it('spends the token only for its claimant', async () => {
    const { node, token } = await nodeWithToken();
    await claimAs(node, token, await presenterKeys());
    const stranger = await presenterOf(await presenterKeys());

    const spend = fixture.tokens.spend({
      by: localActor(),
      node,
      tokenId: parseToken(token).tokenId,
      presenter: stranger.presenter,
      thumbprint: stranger.thumbprint,
      sealingKey: { kty: 'OKP', crv: 'X25519', x: 'x' },
      enrolledAt: fixture.now().toISOString(),
    });

    await expect(spend).rejects.toBeInstanceOf(TokenConditionFailedError);
    const items = await fixture.scan('inventory');
    expect(items.find((item) => item.pk === `node#${node}` && item.sk === 'enrolment')).toBeUndefined();
  });

  it('answers the presenter that spent the token with the same success, and other keys with "spent"', async () => {
    const { node, token } = await nodeWithToken();
    const keys = await presenterKeys();
    const first = await enrol({ by: localActor(), node, token, keys }, deps());
    fixture.clock.ms += 60_000;

    const again = await enrol({ by: localActor(), node, token, keys }, deps());
    const other = enrol({ by: localActor(), node, token, keys: await presenterKeys() }, deps());

    expect({ ...again, again: false }).toEqual({ ...first, again: false });
    expect(again.again).toBe(true);
    await expect(other).rejects.toMatchObject({ reason: 'spent' });
  });

  it('refuses an unknown, a wrong-secret, an expired, a revoked and a replaced token, saying which', async () => {
    const expired = await nodeWithToken(60);
    const revoked = await nodeWithToken();
    await revokeToken(revoked.node, { tokens: fixture.tokens, now: fixture.now }, localActor());
    const replaced = await nodeWithToken();
    await issueToken(replaced.node, 3600, { tokens: fixture.tokens, now: fixture.now }, localActor());
    const wrongSecret = await nodeWithToken();
    const forged = `${wrongSecret.token.slice(0, 18)}${'A'.repeat(43)}`;
    fixture.clock.ms += 61_000;
    const keys = await presenterKeys();

    const reasons = await Promise.all(
      [
        { node: 'node-without-token', token: expired.token },
        { node: wrongSecret.node, token: forged },
        expired,
        revoked,
        replaced,
      ].map((presented) =>
        enrol({ by: localActor(), ...presented, keys }, deps()).then(
          () => 'enrolled',
          (error: unknown) => (error instanceof TokenRefusedError ? error.reason : String(error)),
        ),
      ),
    );

    expect(reasons).toEqual(['unknown', 'unknown', 'expired', 'revoked', 'revoked']);
  });

  it('keeps the node key from being a credential until the spend: the enrolment item appears only then', async () => {
    const { node, token } = await nodeWithToken();
    const keys = await presenterKeys();
    await claimAs(node, token, keys);
    const { thumbprint } = await presenterOf(keys);

    const before = (await fixture.scan('inventory')).filter(
      (item) => item.pk === `node#${node}` && item.sk === 'enrolment',
    );
    await enrol({ by: localActor(), node, token, keys }, deps());
    const after = (await fixture.scan('inventory')).filter(
      (item) => item.pk === `node#${node}` && item.sk === 'enrolment',
    );

    expect(before).toEqual([]);
    expect(after).toEqual([expect.objectContaining({ thumbprint, enrolledAt: expect.any(String) })]);
  });
});
