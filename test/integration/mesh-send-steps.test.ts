import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { meshLimits } from '../../lib/server/core/mesh/limits.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { partsWatchingTransactions } from '../support/watched-transactions.ts';

/**
 * A send that mints more provisions than one DynamoDB transaction holds (100 items: two a
 * provision, two a provider marked) mints the overflow in steps of its own, each fenced by the
 * node's mark (lib/server/adapters/push/push-store.ts). DynamoDB Local enforces the 100-item bound
 * as AWS does.
 */
let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('send-steps');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

const unique = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;
const declarationOf = async (node: string) =>
  (await parts.deliveries.readDelivery(node))?.declaration as Declaration | undefined;

/** CONSUMER's modules `a00`, `m01`…, each consuming the module `db` of every provider node. */
async function consumerOf(consumer: string, providers: readonly string[], modules: number): Promise<void> {
  for (const provider of providers) {
    await addEnrolledNode(parts, provider);
    await parts.meshService.assign(provider, `db-${provider}`, 'postgres', localActor());
  }
  await addEnrolledNode(parts, consumer);
  for (let index = 0; index < modules; index += 1) {
    const module = index === 0 ? 'a00' : `m${String(index).padStart(2, '0')}`;
    await parts.meshService.assign(consumer, module, null, localActor());
    for (const provider of providers)
      await parts.meshService.consume(
        { node: consumer, module },
        { node: provider, module: `db-${provider}` },
        localActor(),
      );
  }
}

// Two hundred providers composed and sent: a minute on a loaded two-core machine, so room past the default.
describe('a send larger than one transaction, on DynamoDB Local', { timeout: 180_000 }, () => {
  it('sends a node given its whole consume limit at once: every provision minted, every provider flushed with its grants', async () => {
    const consumer = unique('many');
    const providers = Array.from({ length: 20 }, (_, index) => `${consumer}-p${index}`);
    await consumerOf(consumer, providers, meshLimits.consumesPerNode / providers.length);

    const outcome = await parts.pushFlow.push({ node: consumer });

    expect(outcome.pushed).toMatchObject({ node: consumer, revision: 1 });
    expect(outcome.flushed.map((entry) => entry.node).sort()).toEqual(expect.arrayContaining(providers));
    expect(outcome.behind.filter((node) => node.startsWith(consumer))).toEqual([]);
    const provisions = (await declarationOf(consumer))?.provisions ?? [];
    expect(provisions).toHaveLength(meshLimits.consumesPerNode);
    const secrets = new Map(provisions.map((p) => [`${p.provider.node} ${p.module}`, p.fingerprint]));
    for (const provider of providers) {
      const grants = (await declarationOf(provider))?.grants ?? [];
      expect(grants).toHaveLength(meshLimits.consumesPerNode / providers.length);
      for (const grant of grants)
        expect(grant.fingerprint).toBe(secrets.get(`${provider} ${grant.consumer.module}`));
    }
    expect((await parts.pushStore.listMarked()).filter((node) => node.startsWith(consumer))).toEqual([]);
  });

  it('sends a node in steps whose relations wait unminted with no mark (items written before marks), and leaves it unmarked', async () => {
    const consumer = unique('unmarked');
    const providers = [0, 1, 2, 3].map((index) => `${consumer}-p${index}`);
    await consumerOf(consumer, providers, 15);
    const mark = (await parts.pushStore.readNode(consumer))?.mark as number;
    await parts.pushStore.clearMark(consumer, mark);
    expect((await parts.pushStore.readNode(consumer))?.mark).toBeUndefined();
    const { counted, parts: pushing } = partsWatchingTransactions(config);

    const sent = await new Pusher({ store: pushing.pushStore }).sendNode(consumer);

    expect(sent).toMatchObject({ node: consumer, revision: 1, sent: true });
    expect(counted.transactions).toBe(2);
    expect((await declarationOf(consumer))?.provisions).toHaveLength(15 * 4);
    expect((await parts.pushStore.readNode(consumer))?.mark).toBeUndefined();
    expect(await parts.pushStore.listMarked()).not.toContain(consumer);
  });

  it('a relation withdrawn between the compose and a minting step stops the step, so no grant outlives its relation', async () => {
    const consumer = unique('racing');
    const providers = [0, 1, 2, 3].map((index) => `${consumer}-p${index}`);
    await consumerOf(consumer, providers, 15);
    const [withdrawnFrom, withdrawn] = [providers[0] as string, { node: consumer, module: 'a00' }];

    // The push has composed from its read; the withdrawal is written before its first step.
    const { counted, parts: pushing } = partsWatchingTransactions(config, {
      before: async (count) => {
        if (count === 1)
          await parts.meshService.unconsume(
            withdrawn,
            {
              node: withdrawnFrom,
              module: `db-${withdrawnFrom}`,
            },
            localActor(),
          );
      },
    });
    const sent = await new Pusher({ store: pushing.pushStore }).sendNode(consumer);
    await parts.pushFlow.push({ behind: true });

    // the first step refused at its fence; composed again, one step and the send
    expect(sent).toMatchObject({ node: consumer, revision: 1, sent: true });
    expect(counted.transactions).toBe(3);
    const provisions = (await declarationOf(consumer))?.provisions ?? [];
    expect(provisions).toHaveLength(15 * 4 - 1);
    expect(provisions.filter((p) => p.module === 'a00').map((p) => p.provider.node)).toEqual(
      providers.slice(1),
    );
    const grants = (await declarationOf(withdrawnFrom))?.grants ?? [];
    expect(grants.map((grant) => grant.consumer.module)).not.toContain('a00');
    expect(grants).toHaveLength(14);
  });
});
