import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { enrolHandler } from '../../lib/server/api/handlers/enrolment.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { presenterOf } from '../../lib/server/core/enrolment/keys.ts';
import { issueToken } from '../../lib/server/core/enrolment/tokens.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture, presenterKeys } from './enrol-fixtures.ts';

let config: MeshConfig;
let fixture: ReturnType<typeof enrolmentFixture>;
let handler: ReturnType<typeof enrolHandler>;

beforeAll(async () => {
  config = await provisionTestResources('enrolrace');
  fixture = enrolmentFixture(config);
  handler = enrolHandler({ tokens: fixture.tokens, nodeKeys: fixture.keys, sender: fixture.sender });
});

const post = (body: unknown) =>
  handler(
    { httpMethod: 'POST', path: '/enrol', headers: {}, body: JSON.stringify(body) } as APIGatewayProxyEvent,
    {} as Context,
  );

const presenters = 50;

/**
 * Presents like a host does when the store could not be asked (`try_again`): the same request
 * again, a little later. A 1000-request burst makes DynamoDB Local time out now and then.
 */
async function present(body: unknown) {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await post(body);
    const code =
      answer.statusCode === 200
        ? 'enrolled'
        : (JSON.parse(answer.body) as { error: { code: string } }).error.code;
    if (code !== 'try_again' || attempt === 20) return { answer, code };
    await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 400));
  }
}

/** Races `presenters` hosts with different keys for one node's token; returns what each was told. */
async function race(node: string) {
  await fixture.addNode(node);
  const { token } = await issueToken(node, 3600, { tokens: fixture.tokens }, localActor());
  const keys = await Promise.all(Array.from({ length: presenters }, () => presenterKeys()));
  const presented = await Promise.all(keys.map((k) => present({ node, token, keys: k })));
  const answers = presented.map((p) => p.answer);
  const codes = presented.map((p) => p.code);
  const winner = keys[codes.indexOf('enrolled')];
  return { node, codes, winner, answers };
}

async function assertOneWinner(outcome: Awaited<ReturnType<typeof race>>) {
  const enrolled = outcome.codes.filter((code) => code === 'enrolled');
  const others = outcome.codes.filter((code) => code !== 'enrolled');
  expect(enrolled).toHaveLength(1);
  expect(new Set(others)).toSatisfy((set: Set<string>) =>
    [...set].every((c) => c === 'token_held' || c === 'token_spent'),
  );
  for (const answer of outcome.answers.filter((a) => a.statusCode === 503)) {
    expect(Number(answer.headers?.['retry-after'])).toBeGreaterThan(0);
  }
  for (const answer of outcome.answers.filter((a) => a.statusCode === 409)) {
    expect(Number(answer.headers?.['retry-after'])).toBeGreaterThan(0);
  }
  const winner = await presenterOf(outcome.winner as NonNullable<typeof outcome.winner>);
  const identity = (await fixture.scan('identity')).filter((item) => item.pk === `node#${outcome.node}`);
  expect(identity.find((item) => item.sk === 'enrolled')).toMatchObject({ thumbprint: winner.thumbprint });
  expect(identity.filter((item) => String(item.sk).startsWith('key#'))).toEqual([
    expect.objectContaining({
      thumbprint: winner.thumbprint,
      presenter: winner.presenter,
      signingKey: outcome.winner?.signing,
      sealingKey: outcome.winner?.sealing,
    }),
  ]);
  const enrolment = (await fixture.scan('inventory')).filter(
    (item) => item.pk === `node#${outcome.node}` && item.sk === 'enrolment',
  );
  expect(enrolment).toEqual([expect.objectContaining({ thumbprint: winner.thumbprint })]);
}

describe('concurrent presenters of one token', () => {
  it('enrols exactly one of 50 presenters and stores exactly its keys', async () => {
    const outcome = await race('racer');
    await assertOneWinner(outcome);
  });

  it('does the same for 20 tokens at once', async () => {
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, index) => race(`racer-${index}`)));
    for (const outcome of outcomes) await assertOneWinner(outcome);
  });
});
