import { SealedDeclarationOpener } from '../../lib/clients/host/agent/declaration-opener.ts';
import { generateNodeKeys, type NodeKeys } from '../../lib/clients/host/keys.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { enrol } from '../../lib/server/core/enrolment/enrol.ts';
import { publicKeys } from '../../lib/server/core/enrolment/keys.ts';
import { issueToken } from '../../lib/server/core/enrolment/tokens.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';

/**
 * Adds a node and enrols it the way `mesh node add`, `mesh token issue` and `mesh-host enrol`
 * do, through the core and the wiring's stores (no HTTP): for tests and benches that need many
 * enrolled nodes quickly. Returns the keys the host would keep.
 */
export async function addEnrolledNode(
  parts: Pick<Parts, 'meshService' | 'tokens' | 'nodeKeys'>,
  node: string,
): Promise<NodeKeys> {
  await parts.meshService.addNode(node, {}, localActor());
  return enrolNode(parts, node);
}

/** Enrols a node that is in the mesh, with new keys (a token issued and spent); returns the keys. */
export async function enrolNode(parts: Pick<Parts, 'tokens' | 'nodeKeys'>, node: string): Promise<NodeKeys> {
  const { token } = await issueToken(node, 3600, { tokens: parts.tokens }, localActor());
  const { keys } = await generateNodeKeys();
  await enrol(
    {
      by: localActor(),
      node,
      token,
      keys: publicKeys.parse({ signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk }),
    },
    { tokens: parts.tokens, keys: parts.nodeKeys },
  );
  return keys;
}

/**
 * A relation as `mesh assign` and `mesh consume` make it: the provider's module given `kind`, the
 * consumer's module, and the consumer consuming it.
 */
export async function relate(
  parts: Pick<Parts, 'meshService'>,
  consumer: { readonly node: string; readonly module: string },
  provider: { readonly node: string; readonly module: string; readonly kind: string },
): Promise<void> {
  await parts.meshService.assign(provider.node, provider.module, provider.kind, localActor());
  await parts.meshService.assign(consumer.node, consumer.module, null, localActor());
  await parts.meshService.consume(consumer, { node: provider.node, module: provider.module }, localActor());
}

/** What the node's host would hand its hook: the declaration it was sent, opened with its private sealing key. */
export async function openedBy(parts: Pick<Parts, 'deliveries'>, node: string, keys: NodeKeys) {
  const privateKey = keys.sealing.privateKey;
  const delivery = await parts.deliveries.readDelivery(node);
  return new SealedDeclarationOpener(node, () => privateKey).open(JSON.stringify(delivery?.declaration));
}

/** The secrets an opened declaration hands the hook, its provisions' then its grants'. */
export function secretsOf(opened: Awaited<ReturnType<typeof openedBy>>): string[] {
  if (!opened.ok) throw new Error(opened.reason);
  const declaration = JSON.parse(opened.body) as {
    provisions: Array<{ secret: string }>;
    grants: Array<{ secret: string }>;
  };
  return [...declaration.provisions, ...declaration.grants].map((entry) => entry.secret);
}
