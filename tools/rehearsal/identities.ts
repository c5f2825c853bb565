import { createHash } from 'node:crypto';
import type { CfnTemplate } from './assembly.ts';

/** Where the judged stack lives: one fake account and region. */
export type RehearsalEnvironment = {
  readonly stackName: string;
  readonly region: string;
  readonly account: string;
  readonly partition: string;
  readonly urlSuffix: string;
};

/** What CloudFormation would give a resource: its Ref and its Fn::GetAtt attributes. */
export type Identity = { readonly ref: string; readonly attributes: Readonly<Record<string, string>> };

/** A short lowercase id derived from a logical id, as API Gateway's ids look (`a1b2c3d4e5`). */
export function shortId(seed: string, length: number): string {
  const digits = BigInt(`0x${createHash('sha256').update(seed).digest('hex')}`).toString(36);
  return digits.slice(0, length);
}

const literal = (value: unknown) => (typeof value === 'string' ? value : undefined);

/**
 * The physical names and ARNs the rehearsal gives every resource: the name a property fixes,
 * else `<stack>-<logicalId>` (CloudFormation adds a random suffix; the rehearsal keeps names
 * readable). Resources of other types get a Ref and no attributes; an attribute asked of them
 * fails where it is asked, naming it.
 */
export function identitiesOf(template: CfnTemplate, env: RehearsalEnvironment): Map<string, Identity> {
  const { region, account, partition } = env;
  const identities = new Map<string, Identity>();
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    const properties = resource.Properties ?? {};
    const generated = (max: number) => `${env.stackName}-${logicalId}`.slice(0, max);
    const named = (property: string, max: number) => literal(properties[property]) ?? generated(max);
    const id = (length: number) => shortId(`${env.stackName}/${logicalId}`, length);
    let identity: Identity;
    switch (resource.Type) {
      case 'AWS::Lambda::Function': {
        const name = named('FunctionName', 64);
        const arn = `arn:${partition}:lambda:${region}:${account}:function:${name}`;
        identity = { ref: name, attributes: { Arn: arn } };
        break;
      }
      case 'AWS::DynamoDB::Table':
      case 'AWS::DynamoDB::GlobalTable': {
        const name = named('TableName', 255);
        const arn = `arn:${partition}:dynamodb:${region}:${account}:table/${name}`;
        identity = {
          ref: name,
          attributes: { Arn: arn, StreamArn: `${arn}/stream/1970-01-01T00:00:00.000`, TableId: id(32) },
        };
        break;
      }
      case 'AWS::SQS::Queue': {
        const fifo = properties.FifoQueue === true || properties.FifoQueue === 'true';
        const name = literal(properties.QueueName) ?? (fifo ? `${generated(75)}.fifo` : generated(80));
        const url = `https://sqs.${region}.${env.urlSuffix}/${account}/${name}`;
        const arn = `arn:${partition}:sqs:${region}:${account}:${name}`;
        identity = { ref: url, attributes: { Arn: arn, QueueName: name, QueueUrl: url } };
        break;
      }
      case 'AWS::S3::Bucket': {
        // a generated bucket name is lower case, at most 63 characters
        const name = literal(properties.BucketName) ?? generated(63).toLowerCase();
        identity = {
          ref: name,
          attributes: {
            Arn: `arn:${partition}:s3:::${name}`,
            DomainName: `${name}.s3.${env.urlSuffix}`,
            RegionalDomainName: `${name}.s3.${region}.${env.urlSuffix}`,
          },
        };
        break;
      }
      case 'AWS::IAM::Role': {
        const name = named('RoleName', 64);
        const path = literal(properties.Path) ?? '/';
        identity = {
          ref: name,
          attributes: { Arn: `arn:${partition}:iam::${account}:role${path}${name}`, RoleId: `AROA${id(17)}` },
        };
        break;
      }
      case 'AWS::Logs::LogGroup': {
        const name = named('LogGroupName', 512);
        identity = {
          ref: name,
          attributes: { Arn: `arn:${partition}:logs:${region}:${account}:log-group:${name}:*` },
        };
        break;
      }
      case 'AWS::StepFunctions::StateMachine': {
        const name = named('StateMachineName', 80);
        const arn = `arn:${partition}:states:${region}:${account}:stateMachine:${name}`;
        identity = { ref: arn, attributes: { Arn: arn, Name: name } };
        break;
      }
      case 'AWS::Events::EventBus': {
        const name = named('Name', 256);
        identity = {
          ref: name,
          attributes: { Arn: `arn:${partition}:events:${region}:${account}:event-bus/${name}`, Name: name },
        };
        break;
      }
      case 'AWS::ApiGateway::RestApi': {
        const restApiId = id(10);
        identity = {
          ref: restApiId,
          attributes: { RestApiId: restApiId, RootResourceId: shortId(`${restApiId}/`, 10) },
        };
        break;
      }
      case 'AWS::ApiGateway::Resource':
        identity = { ref: id(6), attributes: { ResourceId: id(6) } };
        break;
      case 'AWS::ApiGateway::Authorizer':
        identity = { ref: id(6), attributes: { AuthorizerId: id(6) } };
        break;
      case 'AWS::ApiGateway::Stage':
        identity = { ref: named('StageName', 128), attributes: {} };
        break;
      case 'AWS::IoT::Authorizer': {
        const name = named('AuthorizerName', 128);
        identity = {
          ref: name,
          attributes: { Arn: `arn:${partition}:iot:${region}:${account}:authorizer/${name}` },
        };
        break;
      }
      case 'AWS::IoT::TopicRule': {
        // a rule's name takes letters, digits and underscores only
        const name = literal(properties.RuleName) ?? generated(128).replace(/\W/g, '_');
        identity = {
          ref: name,
          attributes: { Arn: `arn:${partition}:iot:${region}:${account}:rule/${name}` },
        };
        break;
      }
      default:
        identity = {
          ref: generated(128),
          // a custom resource's attributes are what its provider answers at deploy: placeholders here
          attributes: resource.Type.startsWith('Custom::')
            ? new Proxy({}, { get: (_, name) => `${generated(64)}-${String(name)}` })
            : {},
        };
    }
    identities.set(logicalId, identity);
  }
  return identities;
}
