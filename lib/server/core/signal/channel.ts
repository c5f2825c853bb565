import * as z from 'zod';

/**
 * The change signal: after a send commits, the push publishes `{revision, etag}` on the node's
 * own topic, retained, so a host that connects later sees the latest. It carries no
 * declaration and no secret: the host still fetches through the signed HTTPS route with its
 * ETag, so every guarantee of that route stays.
 */
export const nodeTopics = (node: string) => `mesh/nodes/${node}`;
export const signalTopic = (node: string) => `${nodeTopics(node)}/signal`;

export const nodeSignal = z.object({
  revision: z.number().int().nonnegative(),
  etag: z.string().min(1).max(200),
  /** The node's host identity was revoked (removed or disenrolled): fetch now, and hear the refusal. */
  revoked: z.literal(true).optional(),
});
export type NodeSignal = z.infer<typeof nodeSignal>;

/**
 * Where a host waits for its signal, as the control plane hands it out (the enrolment answer,
 * the declaration route's `Mesh-Signal` header): the broker's URL, the MQTT username to connect
 * with, and the topic to subscribe to. The client id is the node's name; the password a fresh
 * proof of possession (connect.ts).
 */
export const signalChannel = z.object({
  url: z.url().refine((url) => /^mqtts?:\/\//.test(url), 'the broker URL is mqtt:// or mqtts://'),
  username: z.string().min(1).max(512),
  topic: z.string().min(1).max(256),
});
export type SignalChannel = z.infer<typeof signalChannel>;

/** The declaration route's header carrying the node's channel, as JSON. */
export const signalHeader = 'mesh-signal';

/** How hosts reach the broker: its URL, and on AWS the IoT custom authorizer they name. */
export type BrokerSettings = { readonly brokerUrl: string; readonly authorizerName?: string | undefined };

/**
 * The channel of one node. AWS IoT picks an unsigned custom authorizer by the
 * `x-amz-customauthorizer-name` parameter in the MQTT username; the node's name comes first.
 */
export function signalChannelFor(settings: BrokerSettings, node: string): SignalChannel {
  const suffix = settings.authorizerName
    ? `?x-amz-customauthorizer-name=${encodeURIComponent(settings.authorizerName)}`
    : '';
  return { url: settings.brokerUrl, username: `${node}${suffix}`, topic: signalTopic(node) };
}

/** The node a username names: what comes before any `?` (where IoT's parameters ride). */
export const nodeOfUsername = (username: string) => username.split('?', 1)[0] ?? '';
