import type { CfnResource } from './assembly.ts';
import type { Identity, RehearsalEnvironment } from './identities.ts';
import { describeEndpoint } from './iot-endpoint.ts';

export const isCustomResource = (resource: CfnResource) =>
  resource.Type.startsWith('Custom::') || resource.Type === 'AWS::CloudFormation::CustomResource';

/** An AwsCustomResource's SDK call, as CDK writes it into the `Create` property (a JSON string). */
type SdkCall = {
  readonly service?: string;
  readonly action?: string;
  readonly parameters?: Record<string, unknown>;
  readonly physicalResourceId?: { readonly id?: string };
};

/** `Iot`, `IoT`, `iot` and `@aws-sdk/client-iot` all name the IoT client. */
const clientName = (service: string | undefined) =>
  (service ?? '').toLowerCase().replace(/^@aws-sdk\/client-/, '');

function sdkCallOf(resource: CfnResource): SdkCall | undefined {
  const create = resource.Properties?.Create;
  if (typeof create !== 'string') return undefined;
  try {
    return JSON.parse(create) as SdkCall;
  } catch {
    return undefined;
  }
}

/**
 * What a custom resource's provider will answer, when the rehearsal can tell beforehand: an
 * AwsCustomResource (`Custom::AWS`) making a call the rehearsal's AWS serves itself answers
 * that call's response, flattened, under the physical id its `physicalResourceId` names. The
 * provider still runs at deploy (custom-resources.ts) and its real answer must match. Any
 * other custom resource gets no attributes: a reference to one is a problem, named where it is.
 */
export function customResourceIdentity(
  resource: CfnResource,
  env: RehearsalEnvironment,
  generatedName: string,
): Identity {
  const call = resource.Type === 'Custom::AWS' ? sdkCallOf(resource) : undefined;
  if (call && clientName(call.service) === 'iot' && call.action?.toLowerCase() === 'describeendpoint') {
    const answer = describeEndpoint(String(call.parameters?.endpointType ?? ''), env.iotDataHost);
    if (answer) return { ref: call.physicalResourceId?.id ?? generatedName, attributes: { ...answer } };
  }
  return { ref: generatedName, attributes: {} };
}
