import type { Provision, SealingKey } from '../../core/mesh/model.ts';
import type { RelationRef } from '../../core/mesh/removal.ts';
import { sealingKeyOf } from '../../core/sealing/sealed-secret.ts';
import { nodePartition } from './keys.ts';
import type { Item } from './requests.ts';

export const provisionKeyOf = (p: RelationRef) => ({
  pk: nodePartition(p.consumerNode),
  sk: `provision#${p.consumerModule}#${p.providerNode}#${p.providerModule}`,
});
export const grantKeyOf = (p: RelationRef) => ({
  pk: nodePartition(p.providerNode),
  sk: `grant#${p.providerModule}#${p.consumerNode}#${p.consumerModule}`,
});
/**
 * A provision's attributes, shared by its two items; each item keeps only its own side's sealed
 * copy (`sealedForConsumer` on the provision, `sealedForProvider` on the grant), so a read of
 * one node's partition holds nothing another node could open. No item holds a secret.
 */
const provisionAttributes = (p: Provision) => ({
  consumerNode: p.consumerNode,
  consumerModule: p.consumerModule,
  providerNode: p.providerNode,
  providerModule: p.providerModule,
  kind: p.kind,
  resource: p.resource,
  user: p.user,
  mintedAt: p.mintedAt,
  generation: p.generation,
  fingerprint: p.fingerprint,
  sealedToConsumer: p.sealedTo.consumer,
  sealedToProvider: p.sealedTo.provider,
});

export const provisionItem = (p: Provision): Item => ({
  ...provisionKeyOf(p),
  ...provisionAttributes(p),
  ...(p.sealed.consumer !== undefined ? { sealedForConsumer: p.sealed.consumer } : {}),
});
export const grantItem = (p: Provision): Item => ({
  ...grantKeyOf(p),
  ...provisionAttributes(p),
  ...(p.sealed.provider !== undefined ? { sealedForProvider: p.sealed.provider } : {}),
});

/** A provision or grant as stored; one kept from before sealing has no sealed copy and is minted again. */
export const provisionFrom = (item: Item): Provision => ({
  consumerNode: text(item, 'consumerNode'),
  consumerModule: text(item, 'consumerModule'),
  providerNode: text(item, 'providerNode'),
  providerModule: text(item, 'providerModule'),
  kind: text(item, 'kind'),
  resource: text(item, 'resource'),
  user: text(item, 'user'),
  mintedAt: text(item, 'mintedAt'),
  generation: text(item, 'generation'),
  fingerprint: text(item, 'fingerprint'),
  sealed: {
    ...(typeof item.sealedForConsumer === 'string' ? { consumer: item.sealedForConsumer } : {}),
    ...(typeof item.sealedForProvider === 'string' ? { provider: item.sealedForProvider } : {}),
  },
  sealedTo: { consumer: text(item, 'sealedToConsumer'), provider: text(item, 'sealedToProvider') },
  ...(item.rotationAsked === true ? { rotationAsked: true } : {}),
});

/** The node's sealing key as its `enrolment` item records it (token-store.ts); undefined when none is complete. */
export const sealingKeyFrom = (item: Item | undefined): SealingKey | undefined =>
  item?.sealingKey && typeof item.sealingKey === 'object'
    ? sealingKeyOf(item.sealingKey as { x?: unknown })
    : undefined;

const text = (item: Item, name: string) => (typeof item[name] === 'string' ? (item[name] as string) : '');
