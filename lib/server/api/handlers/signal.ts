import type { IoTCustomAuthorizerEvent, IoTCustomAuthorizerResult, PolicyDocument } from 'aws-lambda';
import * as z from 'zod';
import { logLine, say } from '../../core/coded-lines.ts';
import { HostIdentityError } from '../../core/host-identity/errors.ts';
import type { NodeCredentialReader, ProofReplayGuard } from '../../core/host-identity/ports.ts';
import { nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import { verifyConnect } from '../../core/signal/connect.ts';
import { signalLines } from '../../core/signal/log-lines.ts';
import { nodePolicy } from '../../core/signal/policy.ts';
import type { PresenceStore } from '../../core/signal/ports.ts';
import { notePresence, type PresenceOutcome } from '../../core/signal/presence.ts';
import type { MeshConfig } from '../../setup/config.ts';

/**
 * How long one connection lasts. A policy refresh would present the same password again, which
 * the replay guard refuses (and whose minute is long past), so refresh and disconnect fall
 * together at IoT's longest: once a day a host connects again, with a fresh proof, and a node
 * disenrolled since is refused then at the latest.
 */
export const connectionSeconds = 86_400;

/**
 * The broker's custom authorizer (IoT Core on AWS; the embedded broker's authenticate hook
 * locally): the MQTT username names the node, the password is a fresh proof of possession made
 * for the connect (lib/server/core/signal/connect.ts), checked by the host routes' verifier with the
 * replay guard. The answer allows exactly what `nodePolicy` says: connect as client `<node>`,
 * subscribe to and receive the node's own topics. A proof that does not hold is refused; a
 * store that cannot be asked throws, which IoT answers as a refused connect: the host tries
 * again later, and polls meanwhile.
 */
export type SignalAuthorizerDeps = {
  readonly credentials: NodeCredentialReader;
  readonly replayGuard: ProofReplayGuard;
  /** The account, region and partition the policy's resources are in. */
  readonly config: Pick<MeshConfig, 'region' | 'signal'>;
  readonly log: Log;
  readonly now?: Clock;
};

export function signalAuthorizerHandler(deps: SignalAuthorizerDeps) {
  const scope = {
    partition: deps.config.signal?.partition ?? 'aws',
    region: deps.config.region,
    accountId: deps.config.signal?.accountId ?? '000000000000',
  };
  return async function authorizeConnect(
    event: IoTCustomAuthorizerEvent,
  ): Promise<IoTCustomAuthorizerResult> {
    const mqtt = event.protocolData?.mqtt;
    try {
      const verified = await verifyConnect(
        {
          username: mqtt?.username,
          password:
            mqtt?.password === undefined ? undefined : Buffer.from(mqtt.password, 'base64').toString('utf8'),
        },
        {
          credentials: deps.credentials,
          replayGuard: deps.replayGuard,
          ...(deps.now ? { now: deps.now } : {}),
        },
      );
      return {
        isAuthenticated: true,
        principalId: principalIdOf(verified.node),
        disconnectAfterInSeconds: connectionSeconds,
        refreshAfterInSeconds: connectionSeconds,
        policyDocuments: [nodePolicy(scope, verified.node) as unknown as PolicyDocument],
      };
    } catch (error) {
      if (!(error instanceof HostIdentityError)) throw error;
      logLine(
        deps.log,
        say(signalLines.connectRefused, {
          problem: error.code,
          username: mqtt?.username?.slice(0, 80),
          clientId: mqtt?.clientId?.slice(0, 80),
          connection: event.connectionMetadata?.id,
        }),
      );
      return {
        isAuthenticated: false,
        principalId: 'refused',
        disconnectAfterInSeconds: 300,
        refreshAfterInSeconds: 300,
        policyDocuments: [],
      };
    }
  };
}

/** IoT takes 1 to 128 letters and digits as principal id; a node name's hex is one, and says which. */
export const principalIdOf = (node: string) => Buffer.from(node, 'utf8').toString('hex');

/**
 * An IoT lifecycle event (`$aws/events/presence/connected|disconnected/<clientId>`), as the
 * topic rule passes it on; the embedded broker makes the same from its client events.
 */
export const lifecycleEvent = z.object({
  clientId: z.string(),
  eventType: z.enum(['connected', 'disconnected']),
  timestamp: z.number().int().nonnegative(),
  versionNumber: z.number().int().nonnegative().default(0),
});
export type LifecycleEvent = z.input<typeof lifecycleEvent>;

/**
 * Presence: a lifecycle event sets the node's `online` and `lastHeard`, the newer event winning
 * (lib/server/core/signal/presence.ts). A malformed event, or a client that is not a node, is logged
 * and dropped: retrying it would change nothing. A store that cannot be asked throws, so the
 * rule's asynchronous invocation is retried by Lambda.
 */
export function signalPresenceHandler(deps: { readonly presence: PresenceStore; readonly log: Log }) {
  return async function recordLifecycle(event: unknown): Promise<PresenceOutcome | 'dropped'> {
    const parsed = lifecycleEvent.safeParse(event);
    const node = parsed.success ? nodeName.safeParse(parsed.data.clientId) : undefined;
    if (!parsed.success || !node?.success) {
      logLine(deps.log, say(signalLines.eventDropped, { event: JSON.stringify(event).slice(0, 300) }));
      return 'dropped';
    }
    return notePresence(deps, {
      node: node.data,
      state: parsed.data.eventType,
      atMs: parsed.data.timestamp,
      version: parsed.data.versionNumber,
    });
  };
}
