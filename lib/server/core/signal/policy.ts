import { glob } from '../glob.ts';
import { nodeTopics } from './channel.ts';

/**
 * What a connected node may do on the broker, as an AWS IoT policy document: the custom
 * authorizer returns it on AWS, and the embedded broker enforces the very same document with
 * `policyAllows` below, so the policy itself is what the local tests exercise.
 */
export type IotAction = 'iot:Connect' | 'iot:Subscribe' | 'iot:Receive' | 'iot:Publish';

export type IotPolicyStatement = {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action: string | readonly string[];
  readonly Resource: string | readonly string[];
};
export type IotPolicyDocument = {
  readonly Version: string;
  readonly Statement: readonly IotPolicyStatement[];
};

/** Which account and region the ARNs name. */
export type IotScope = { readonly partition: string; readonly region: string; readonly accountId: string };

/** `client` for iot:Connect, `topicfilter` for iot:Subscribe, `topic` for iot:Receive and iot:Publish. */
export const iotArn = (scope: IotScope, kind: 'client' | 'topic' | 'topicfilter', name: string) =>
  `arn:${scope.partition}:iot:${scope.region}:${scope.accountId}:${kind}/${name}`;

/** Connect as client `<node>`, subscribe to and receive the node's own topics; nothing else. */
export function nodePolicy(scope: IotScope, node: string): IotPolicyDocument {
  return {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: 'iot:Connect', Resource: iotArn(scope, 'client', node) },
      {
        Effect: 'Allow',
        Action: 'iot:Subscribe',
        Resource: iotArn(scope, 'topicfilter', `${nodeTopics(node)}/*`),
      },
      { Effect: 'Allow', Action: 'iot:Receive', Resource: iotArn(scope, 'topic', `${nodeTopics(node)}/*`) },
    ],
  };
}

/**
 * IoT's evaluation of policy documents for one action on one resource: allowed when some Allow
 * statement matches and no Deny does. In actions and resources `*` matches any characters
 * (`/` included) and `?` exactly one; MQTT's own `+` and `#` are plain characters there.
 */
export function policyAllows(
  documents: readonly IotPolicyDocument[],
  action: IotAction,
  resource: string,
): boolean {
  let allowed = false;
  for (const statement of documents.flatMap((document) => document.Statement)) {
    const matches =
      [statement.Action].flat().some((pattern) => iotGlob(pattern).test(action)) &&
      [statement.Resource].flat().some((pattern) => iotGlob(pattern).test(resource));
    if (!matches) continue;
    if (statement.Effect === 'Deny') return false;
    allowed = true;
  }
  return allowed;
}

/** IoT's `*` and `?`, matched without backtracking (lib/server/core/glob.ts): a topic costs O(topic + pattern). */
const iotGlob = (pattern: string) => glob(pattern, { question: true });
