import { ProofMissingError } from '../host-identity/errors.ts';
import { proofScheme } from '../host-identity/proof.ts';
import { type VerifiedHost, type VerifyOptions, verifyHostProof } from '../host-identity/verify.ts';
import { nodeName } from '../names.ts';
import { nodeOfUsername, signalTopic } from './channel.ts';

/**
 * A host connects to the broker with its node's name as MQTT username (plus whatever the broker
 * needs after a `?`) and, as password, a fresh proof of possession made for the connect: the
 * same JWS as on HTTPS (lib/server/core/host-identity/proof.ts), with `htm` CONNECT, `htu` the path
 * form of the node's signal topic (`/mesh/nodes/<node>/signal`) and `bh` the hash of an empty
 * body. It is checked by the same verifier as the host routes, the replay guard included: a
 * password connects once, within the proof's minute.
 */
export const connectMethod = 'CONNECT';
export const connectTarget = (node: string) => `/${signalTopic(node)}`;

export type ConnectRequest = {
  readonly username: string | undefined;
  /** The MQTT password as sent (UTF-8): the proof's compact JWS. */
  readonly password: string | undefined;
};

/** The node that proved itself, or a HostIdentityError saying why not. */
export async function verifyConnect(request: ConnectRequest, options: VerifyOptions): Promise<VerifiedHost> {
  const node = nodeName.safeParse(nodeOfUsername(request.username ?? ''));
  if (!node.success) {
    throw new ProofMissingError('bad_username', 'the MQTT username must start with the node name');
  }
  return verifyHostProof(
    {
      authorization: `${proofScheme} ${request.password ?? ''}`,
      method: connectMethod,
      target: connectTarget(node.data),
      body: '',
      routeNode: node.data,
    },
    options,
  );
}
