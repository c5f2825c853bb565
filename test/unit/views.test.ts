import { describe, expect, it } from 'vitest';
import { type TokenFacts, tokenStateOf, viewOfToken } from '../../lib/server/core/enrolment/token-state.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import { hideSecrets, listedNodes, type MeshNode, presenceOf } from '../../lib/server/core/views/views.ts';

const now = Date.parse('2026-07-22T10:00:00Z');
const token = (extra: Partial<TokenFacts> = {}): TokenFacts => ({
  node: 'web1',
  tokenId: 'abc123def456',
  issuedAt: '2026-07-22T09:00:00.000Z',
  validUntilMs: now + 60_000,
  replaced: [],
  ...extra,
});

describe('a token as operators see it', () => {
  it('has one state, in the order the claim and spend conditions give', () => {
    expect(tokenStateOf(token(), now)).toBe('issued');
    expect(tokenStateOf(token({ validUntilMs: now }), now)).toBe('expired');
    expect(tokenStateOf(token({ claimedBy: 'k', leaseUntilMs: now + 1 }), now)).toBe('claimed');
    // A live claim may still spend a token that has just expired.
    expect(tokenStateOf(token({ claimedBy: 'k', leaseUntilMs: now + 1, validUntilMs: now - 1 }), now)).toBe(
      'claimed',
    );
    expect(tokenStateOf(token({ claimedBy: 'k', leaseUntilMs: now - 1 }), now)).toBe('issued');
    expect(tokenStateOf(token({ spentBy: 'k', spentAt: 'x' }), now)).toBe('spent');
    expect(tokenStateOf(token({ spentBy: 'k', revokedAt: 'y' }), now)).toBe('revoked');
  });

  it('never carries the secret or its hash', () => {
    const view = viewOfToken({ ...token(), secretHash: 'hash' } as TokenFacts, now);
    expect(JSON.stringify(view)).not.toContain('hash"');
    expect(view).toEqual({
      state: 'issued',
      tokenId: 'abc123def456',
      issuedAt: '2026-07-22T09:00:00.000Z',
      validUntil: '2026-07-22T10:01:00.000Z',
      claimedAt: null,
      spentAt: null,
      revokedAt: null,
      replaced: 0,
    });
  });
});

describe('hideSecrets', () => {
  it('hides every member named like a secret, at any depth, and nothing else', () => {
    const declaration = {
      node: 'web1',
      provisions: [{ resource: 'web1_app', user: 'web1_app', secret: 's3cret', provider: { node: 'b' } }],
      grants: [{ secret: 'other', nested: { apiToken: 't', privateKey: 'k', dbPassword: 'p' } }],
      modules: [{ name: 'app', provides: null, version: null }],
    };
    const hidden = JSON.stringify(hideSecrets(declaration));
    for (const secret of ['s3cret', 'other', '"t"', '"k"', '"p"']) expect(hidden).not.toContain(secret);
    expect(hideSecrets(declaration)).toMatchObject({
      provisions: [{ resource: 'web1_app', user: 'web1_app', secret: '(hidden)', provider: { node: 'b' } }],
      modules: [{ name: 'app', provides: null, version: null }],
    });
  });
});

const status = (node: string, extra: Record<string, unknown> = {}) =>
  ({
    node,
    enrolled: false,
    enrolledAt: null,
    sentRevision: null,
    sentAt: null,
    appliedRevision: null,
    appliedAt: null,
    reportState: null,
    behind: false,
    online: null,
    lastHeard: null,
    ...extra,
  }) as NodeStatus;

describe('presence and the node list', () => {
  it('takes presence from the status when it says online, and leaves it unknown otherwise', () => {
    expect(presenceOf(status('a'))).toBeNull();
    expect(presenceOf(status('a', { online: true }))).toBe('online');
    expect(presenceOf(status('a', { online: false }))).toBe('offline');
  });

  it('counts each node’s relations both ways', () => {
    const node = (name: string): MeshNode => ({ ...status(name), modules: [], presence: null });
    const edge = (consumer: string, provider: string) => ({
      consumer: { node: consumer, module: 'app' },
      provider: { node: provider, module: 'db' },
      kind: 'postgres',
      minted: true,
    });
    const listed = listedNodes({ nodes: [node('a'), node('b')], edges: [edge('a', 'b'), edge('b', 'b')] });
    expect(listed.map((n) => [n.node, n.relations])).toEqual([
      ['a', { consumes: 1, consumedBy: 0 }],
      ['b', { consumes: 1, consumedBy: 2 }],
    ]);
  });
});
