import type { AwsCall, CallContext } from './aws-requests.ts';
import type { LambdaService } from './lambda-service.ts';

/** What a function's Invoke of another function asks: which one, how, and with what. */
export type InvokeInput = {
  readonly functionName: string;
  /** `Event` (asynchronous: queued, answered 202 at once) or `RequestResponse`. */
  readonly invocationType: string;
  readonly payload: string;
};

/**
 * A Lambda Invoke as the SDK sends it (REST: `POST /2015-03-31/functions/{name}/invocations`,
 * the invocation type in `X-Amz-Invocation-Type`), read for the IAM check: InvokeFunction on
 * the function's unqualified ARN, as IAM evaluates an unqualified invoke. Only the asynchronous
 * invoke is served: it is the one Mesh makes (mesh-push starting push-run).
 */
export function readLambdaCall(
  method: string,
  url: URL,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: string,
  context: CallContext,
): AwsCall | { readonly unreadable: string } {
  const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(url.pathname);
  if (method !== 'POST' || !match)
    return {
      unreadable: `Lambda ${method} ${url.pathname} is not an Invoke, the one Lambda call the rehearsal serves`,
    };
  const functionName = decodeURIComponent(match[1] as string);
  const invocationType = String(headers['x-amz-invocation-type'] ?? 'RequestResponse');
  if (invocationType !== 'Event')
    return { unreadable: `an Invoke of ${functionName} of type ${invocationType}; only Event is served` };
  const resource = functionName.startsWith('arn:')
    ? functionName
    : `arn:${context.partition}:lambda:${context.region}:${context.account}:function:${functionName}`;
  const input: InvokeInput = { functionName: resource, invocationType, payload: body };
  return {
    service: 'lambda',
    operation: 'Invoke',
    input,
    accesses: [{ action: 'lambda:InvokeFunction', resource }],
  };
}

/**
 * An asynchronous invoke, as Lambda takes one: queued and answered 202 at once, the function
 * run afterwards with the payload as its event. A function the stack does not have is Lambda's
 * 404; a run that fails is logged by its sandbox, as Lambda would log it.
 */
export function invokeLater(lambda: LambdaService, call: AwsCall) {
  const input = call.input as InvokeInput;
  const target = lambda.byArn(input.functionName);
  if (!target)
    return {
      status: 404,
      errorType: 'ResourceNotFoundException',
      body: { message: `Function not found: ${input.functionName}` },
    };
  let event: unknown;
  try {
    event = JSON.parse(input.payload || 'null');
  } catch {
    return {
      status: 400,
      errorType: 'InvalidRequestContentException',
      body: { message: 'the payload is not JSON' },
    };
  }
  lambda.invoke(target, event).catch(() => undefined);
  return { status: 202, body: {} };
}
