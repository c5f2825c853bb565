import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { enrolmentItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import type { Item } from '../../lib/server/adapters/dynamodb/requests.ts';
import {
  keyedProvidersOf,
  type MintDetails,
  newGeneration,
  newProvisionSecret,
  sealWithHpke,
} from '../../lib/server/core/mesh/declaration.ts';
import { mintProvision } from '../../lib/server/core/mesh/mint.ts';
import type { NodeSnapshot, Provision, SealingKey } from '../../lib/server/core/mesh/model.ts';
import { fingerprintOf, sealingKeyOf } from '../../lib/server/core/sealing/sealed-secret.ts';

/**
 * One X25519 key pair for meshes built in tests and benches: every node enrols with it unless a
 * test says otherwise, so their relations are minted (docs/decisions/sealed-secrets.md).
 */
export const testSealing: { readonly key: SealingKey; readonly privateKey: KeyObject } = (() => {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return { key: sealingKeyOf(publicKey.export({ format: 'jwk' })) as SealingKey, privateKey };
})();

/** A node's completed enrolment as the spend writes it (token-store.ts), with the test key. */
export const enrolmentItemFor = (node: string, key: SealingKey = testSealing.key): Item => ({
  ...enrolmentItemKey(node),
  node,
  enrolledAt: '2026-01-01T00:00:00.000Z',
  thumbprint: `seeded-${node}`,
  sealingKey: key.jwk,
  presenter: `seeded-${node}`,
  tokenId: `seeded-${node}`,
});

/**
 * A provision as a mint leaves it, for meshes written straight to the store: sealed to the test
 * key on both sides. The copies are the size of real ones but open nowhere; a test that opens
 * secrets mints them through a push.
 */
export function seededProvision(
  relation: Omit<Provision, 'generation' | 'fingerprint' | 'sealed' | 'sealedTo'>,
  index: number,
): Provision {
  const generation = `seed${String(index).padStart(8, '0')}`;
  const copy = `hpke1.seeded00.${'A'.repeat(43)}.${generation}${'B'.repeat(52)}`;
  return {
    ...relation,
    generation,
    fingerprint: fingerprintOf(`seeded-secret-${index}`, new TextEncoder().encode(generation)),
    sealed: { consumer: copy, provider: copy },
    sealedTo: { consumer: testSealing.key.id, provider: testSealing.key.id },
  };
}

/** The sealing keys of the providers a seeded node consumes: every one enrolled with the test key. */
export const allEnrolled = (snapshot: NodeSnapshot): ReadonlyMap<string, SealingKey> =>
  new Map(keyedProvidersOf(snapshot).map((node) => [node, testSealing.key]));

/** Mint details for composing seeded meshes, where everything is already minted. */
export const unusedMint = (now: string): MintDetails => ({
  secret: () => 'unused',
  now: () => now,
  generation: () => 'unused',
  seal: async () => 'unused',
});

/** Writes the node's completed enrolment (as the spend would) with the test key, for mesh tests that need no host. */
export async function enrolInStore(
  client: DynamoDBDocumentClient,
  tableName: string,
  node: string,
  key: SealingKey = testSealing.key,
): Promise<void> {
  await client.send(new PutCommand({ TableName: tableName, Item: enrolmentItemFor(node, key) }));
}

/**
 * A provision minted as a push mints it, for meshes seeded straight into the store that a real
 * host then opens: a new secret sealed to both keys, bound to the relation and a new generation.
 */
export async function sealedProvision(
  relation: Omit<Provision, 'generation' | 'fingerprint' | 'sealed' | 'sealedTo'>,
  keys: { readonly consumer: SealingKey; readonly provider: SealingKey } = {
    consumer: testSealing.key,
    provider: testSealing.key,
  },
  /** `provider`: only the provider's copy is sealed (no host opens the consumer's), at half the cost. */
  sides: 'both' | 'provider' = 'both',
): Promise<Provision> {
  const { consumerNode, ...rest } = relation;
  return mintProvision(consumerNode, rest, keys, {
    secret: newProvisionSecret,
    now: () => relation.mintedAt,
    generation: newGeneration,
    seal: (secret, key, binding) =>
      sides === 'provider' && binding.side === 'consumer'
        ? Promise.resolve(`unopened.${binding.generation}`)
        : sealWithHpke(secret, key, binding),
  });
}

/**
 * For property tests of which nodes a push sends, over hundreds of random meshes: a copy that
 * names its binding instead of real HPKE, whose cost would only slow the run. What sealing
 * itself holds is tested with real keys (test/unit/sealed-mint.test.ts).
 */
export const unsealedMint: Pick<MintDetails, 'seal'> = {
  seal: async (_secret, key, binding) =>
    `unsealed.${key.id}.${binding.node}.${binding.side}.${binding.generation}`,
};
