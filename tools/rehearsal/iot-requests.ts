import type { AwsCall, CallContext } from './aws-requests.ts';

/** The SigV4 signing names of IoT Core's control plane and data plane, which speak REST, not X-Amz-Target. */
export const iotSigningNames = ['iot', 'iotdata'] as const;
export type IotSigningName = (typeof iotSigningNames)[number];

export const isIotSigningName = (name: string): name is IotSigningName =>
  (iotSigningNames as readonly string[]).includes(name);

/** What an IoT Publish carries once read: the topic, QoS and RETAIN flag. */
export type PublishInput = { readonly topic: string; readonly qos: number; readonly retain: boolean };

const topicArn = (context: CallContext, topic: string) =>
  `arn:${context.partition}:iot:${context.region}:${context.account}:topic/${topic}`;

/**
 * Reads an IoT REST call into its operation and the IAM actions it needs. The data plane's
 * Publish needs `iot:Publish` on the topic, and with RETAIN also `iot:RetainPublish` (IoT
 * refuses a retained publish without it); the control plane's DescribeEndpoint needs
 * `iot:DescribeEndpoint`, which has no resource. Anything else is refused as unreadable: the
 * rehearsal serves no other IoT operation, so it cannot check one.
 */
export function readIotCall(
  signingName: IotSigningName,
  method: string,
  url: URL,
  context: CallContext,
): AwsCall | { readonly unreadable: string } {
  const query = url.searchParams;
  if (signingName === 'iotdata' && method === 'POST' && url.pathname.startsWith('/topics/')) {
    const topic = decodeURIComponent(url.pathname.slice('/topics/'.length));
    const input: PublishInput = {
      topic,
      qos: Number(query.get('qos') ?? 0),
      retain: query.get('retain') === 'true',
    };
    const resource = topicArn(context, topic);
    return {
      service: 'iotdata',
      operation: 'Publish',
      input,
      accesses: [
        { action: 'iot:Publish', resource },
        ...(input.retain ? [{ action: 'iot:RetainPublish', resource }] : []),
      ],
    };
  }
  if (signingName === 'iot' && method === 'GET' && url.pathname === '/endpoint') {
    return {
      service: 'iot',
      operation: 'DescribeEndpoint',
      input: { endpointType: query.get('endpointType') ?? undefined },
      accesses: [{ action: 'iot:DescribeEndpoint', resource: '*' }],
    };
  }
  return {
    unreadable: `IoT ${signingName === 'iot' ? 'control' : 'data'} plane ${method} ${url.pathname} is an operation the rehearsal does not serve`,
  };
}
