import { localActor } from '../../lib/core/audit/record.ts';
import { enrol } from '../../lib/core/enrolment/enrol.ts';
import { publicKeys } from '../../lib/core/enrolment/keys.ts';
import { issueToken } from '../../lib/core/enrolment/tokens.ts';
import { generateNodeKeys, type NodeKeys } from '../../lib/host/keys.ts';
import type { Parts } from '../../lib/wiring.ts';

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
