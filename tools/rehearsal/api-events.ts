import type { IncomingMessage } from 'node:http';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { ApiModel, MethodModel, ResourceNode } from './api-model.ts';

/** A request as API Gateway sees it once routed: the method, the path parameters and the parts of the request. */
export type RoutedRequest = {
  readonly method: MethodModel;
  readonly pathParameters: Record<string, string>;
  /** The path below the stage, percent-decoded segments joined again (`/nodes/app/declaration`). */
  readonly path: string;
  /** The path as requested, stage included (`/v1/nodes/app/declaration`). */
  readonly fullPath: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly multiValueHeaders: Record<string, string[]>;
  readonly requestId: string;
  readonly sourceIp: string;
  readonly userAgent: string | null;
  readonly body: Buffer;
  readonly receivedAt: number;
};

/** Finds the resource and path parameters for a path: at each level a literal segment wins over `{param}`, then `{proxy+}`. */
export function matchResource(
  node: ResourceNode,
  segments: readonly string[],
): { node: ResourceNode; pathParameters: Record<string, string> } | undefined {
  if (segments.length === 0) return { node, pathParameters: {} };
  const [head, ...rest] = segments as [string, ...string[]];
  const literal = node.children.find((child) => child.pathPart === head);
  const ordered = [
    ...(literal ? [literal] : []),
    ...node.children.filter((child) => /^\{\w+\}$/.test(child.pathPart)),
  ];
  for (const child of ordered) {
    const found = matchResource(child, rest);
    if (!found) continue;
    const parameter = /^\{(\w+)\}$/.exec(child.pathPart)?.[1];
    if (parameter) found.pathParameters[parameter] = head;
    return found;
  }
  const greedy = node.children.find((child) => /^\{\w+\+\}$/.test(child.pathPart));
  if (greedy) return { node: greedy, pathParameters: { [greedy.pathPart.slice(1, -2)]: segments.join('/') } };
  return undefined;
}

/** Headers as API Gateway hands them on: the client's own spelling, the last value in `headers`, all in `multiValueHeaders`. */
export function requestHeaders(request: IncomingMessage): {
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
} {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index] as string;
    const value = request.rawHeaders[index + 1] as string;
    headers[name] = value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  return { headers, multiValueHeaders };
}

export function headerValue(headers: Record<string, string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  return Object.entries(headers).find(([key]) => key.toLowerCase() === lower)?.[1];
}

/** What the proxy event and a REQUEST authorizer's event both carry of the request. */
function requestParts(routed: RoutedRequest) {
  return {
    resource: routed.method.resourcePath,
    path: routed.path,
    httpMethod: routed.method.httpMethod,
    headers: routed.headers,
    multiValueHeaders: routed.multiValueHeaders,
    ...queryParameters(routed.url),
  };
}

function queryParameters(url: URL) {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    single[name] = value;
    multi[name] = [...(multi[name] ?? []), value];
  }
  const any = Object.keys(single).length > 0;
  return { queryStringParameters: any ? single : null, multiValueQueryStringParameters: any ? multi : null };
}

/** The REST API's request context, as the proxy event and a REQUEST authorizer's event carry it. */
export function requestContext(
  api: ApiModel,
  routed: RoutedRequest,
  account: string,
  extra: { identity?: Record<string, string | null>; authorizer?: Record<string, unknown> | null } = {},
): APIGatewayProxyEvent['requestContext'] {
  return {
    accountId: account,
    apiId: api.restApiId,
    authorizer: extra.authorizer ?? null,
    domainName: routed.url.host,
    domainPrefix: routed.url.hostname.split('.')[0],
    extendedRequestId: routed.requestId,
    httpMethod: routed.method.httpMethod,
    identity: {
      sourceIp: routed.sourceIp,
      userAgent: routed.userAgent,
      accessKey: null,
      accountId: null,
      caller: null,
      user: null,
      userArn: null,
      ...extra.identity,
    } as APIGatewayProxyEvent['requestContext']['identity'],
    path: routed.fullPath,
    protocol: 'HTTP/1.1',
    requestId: routed.requestId,
    requestTime: new Date(routed.receivedAt).toUTCString(),
    requestTimeEpoch: routed.receivedAt,
    resourceId: routed.method.logicalId,
    resourcePath: routed.method.resourcePath,
    stage: api.stageName,
  };
}

/** The Lambda proxy integration's event for a routed request. */
export function proxyEvent(
  routed: RoutedRequest,
  context: APIGatewayProxyEvent['requestContext'],
): APIGatewayProxyEvent {
  const text = routed.body.toString('utf8');
  const binary = routed.body.length > 0 && Buffer.from(text, 'utf8').compare(routed.body) !== 0;
  return {
    ...requestParts(routed),
    pathParameters: Object.keys(routed.pathParameters).length > 0 ? routed.pathParameters : null,
    stageVariables: null,
    requestContext: context,
    body: routed.body.length === 0 ? null : binary ? routed.body.toString('base64') : text,
    isBase64Encoded: binary,
  };
}

/** A REQUEST authorizer's event. */
export function requestAuthorizerEvent(
  routed: RoutedRequest,
  methodArn: string,
  context: APIGatewayProxyEvent['requestContext'],
) {
  return {
    type: 'REQUEST',
    methodArn,
    ...requestParts(routed),
    pathParameters: routed.pathParameters,
    stageVariables: {},
    requestContext: context,
  };
}
