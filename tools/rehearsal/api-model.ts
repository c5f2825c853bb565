import { displayName, resourcesOfType } from './assembly.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import { unrenderableParts } from './gateway-responses.ts';
import type { LambdaService } from './lambda-service.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import { type References, referencedId } from './references.ts';

export type Throttle = { readonly rateLimit: number; readonly burstLimit: number };

export type AuthorizerModel = {
  readonly logicalId: string;
  readonly id: string;
  readonly type: 'REQUEST' | 'TOKEN';
  readonly fn: FunctionDefinition;
  /** `method.request.header.Authorization` and the like; a request missing one is 401 without asking the function. */
  readonly identitySources: readonly string[];
  readonly ttlSeconds: number;
};

export type MethodModel = {
  readonly logicalId: string;
  readonly httpMethod: string;
  /** The resource path with its `{parameters}` (`/nodes/{node}/declaration`). */
  readonly resourcePath: string;
  readonly authorizationType: 'NONE' | 'AWS_IAM' | 'CUSTOM';
  readonly authorizer: AuthorizerModel | undefined;
  /** `method.request.querystring.x` / `header.x` / `path.x` a validator requires. */
  readonly requiredParameters: readonly string[];
  readonly fn: FunctionDefinition;
  readonly timeoutMs: number;
};

export type ResourceNode = {
  readonly pathPart: string;
  readonly path: string;
  readonly children: ResourceNode[];
  readonly methods: Map<string, MethodModel>;
};

export type GatewayResponseModel = {
  readonly statusCode: string | undefined;
  readonly templates: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
};

/** A REST API of the template as API Gateway would serve it at one stage. */
export type ApiModel = {
  readonly logicalId: string;
  readonly restApiId: string;
  readonly stageName: string;
  readonly root: ResourceNode;
  readonly gatewayResponses: ReadonlyMap<string, GatewayResponseModel>;
  readonly stageThrottle: Throttle | undefined;
  /** `METHOD /path` → its own throttle. */
  readonly methodThrottles: ReadonlyMap<string, Throttle>;
};

/** The template's one REST API, every method checked for what the rehearsal can serve; undefined when it has none. */
export function readApi(references: References, lambda: LambdaService): ApiModel | undefined {
  const template = references.template;
  const apis = resourcesOfType(template, 'AWS::ApiGateway::RestApi');
  if (apis.length === 0) return undefined;
  if (apis.length > 1)
    throw new RehearsalProblem('api', `the template has ${apis.length} REST APIs; the rehearsal serves one`);
  const [apiId, api] = apis[0] as (typeof apis)[number];
  if (api.Properties?.Policy !== undefined)
    throw new RehearsalProblem(
      'api',
      `the REST API ${apiId} has a resource policy, which the rehearsal does not evaluate`,
    );
  const belongs = (properties: Record<string, unknown> | undefined) =>
    referencedId(properties?.RestApiId) === apiId;
  const findings: string[] = [];

  const stage = resourcesOfType(template, 'AWS::ApiGateway::Stage').find(([, r]) => belongs(r.Properties));
  if (!stage) throw new RehearsalProblem('api', `the REST API ${apiId} has no stage to serve`);
  const stageProperties = references.resolve(stage[1].Properties ?? {}, stage[0]) as Record<string, unknown>;

  const nodes = new Map<string, ResourceNode>();
  const rootId = references.identity(apiId)?.attributes.RootResourceId as string;
  const root: ResourceNode = { pathPart: '', path: '/', children: [], methods: new Map() };
  nodes.set(rootId, root);
  const pending = resourcesOfType(template, 'AWS::ApiGateway::Resource').filter(([, r]) =>
    belongs(r.Properties),
  );
  while (pending.length > 0) {
    const index = pending.findIndex(([, r]) =>
      nodes.has(references.resolveString(r.Properties?.ParentId, 'ParentId')),
    );
    if (index < 0)
      throw new RehearsalProblem(
        'api',
        `resources ${pending.map(([id]) => id).join(', ')} hang from no resource of the API`,
      );
    const [logicalId, resource] = pending.splice(index, 1)[0] as (typeof pending)[number];
    const parent = nodes.get(
      references.resolveString(resource.Properties?.ParentId, logicalId),
    ) as ResourceNode;
    const pathPart = String(resource.Properties?.PathPart);
    const node: ResourceNode = {
      pathPart,
      path: `${parent.path === '/' ? '' : parent.path}/${pathPart}`,
      children: [],
      methods: new Map(),
    };
    parent.children.push(node);
    nodes.set(references.identity(logicalId)?.ref as string, node);
  }

  const authorizers = new Map<string, AuthorizerModel>();
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::ApiGateway::Authorizer').filter(
    ([, r]) => belongs(r.Properties),
  )) {
    const properties = references.resolve(resource.Properties ?? {}, logicalId) as Record<string, unknown>;
    const fnArn = /\/functions\/(.+)\/invocations$/.exec(String(properties.AuthorizerUri ?? ''))?.[1] ?? '';
    const fn = lambda.byArn(fnArn);
    const type = String(properties.Type);
    if (!fn || (type !== 'REQUEST' && type !== 'TOKEN')) {
      findings.push(
        `authorizer ${logicalId}: a ${type} authorizer on ${fnArn || 'no function'} is not one the rehearsal runs (Lambda REQUEST and TOKEN authorizers of this template only)`,
      );
      continue;
    }
    const id = references.identity(logicalId)?.ref as string;
    authorizers.set(id, {
      logicalId,
      id,
      type,
      fn,
      identitySources: String(properties.IdentitySource ?? '')
        .split(',')
        .map((source) => source.trim())
        .filter(Boolean),
      ttlSeconds: Number(properties.AuthorizerResultTtlInSeconds ?? 300),
    });
  }

  const validators = new Map<string, { body: boolean; parameters: boolean }>();
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::ApiGateway::RequestValidator').filter(
    ([, r]) => belongs(r.Properties),
  ))
    validators.set(references.identity(logicalId)?.ref as string, {
      body: resource.Properties?.ValidateRequestBody === true,
      parameters: resource.Properties?.ValidateRequestParameters === true,
    });

  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::ApiGateway::Method').filter(([, r]) =>
    belongs(r.Properties),
  )) {
    const where = `method ${displayName(template, logicalId)} (${logicalId})`;
    const properties = references.resolve(resource.Properties ?? {}, where) as Record<string, unknown>;
    const node = nodes.get(String(properties.ResourceId));
    const integration = (properties.Integration ?? {}) as {
      Type?: string;
      Uri?: string;
      TimeoutInMillis?: number;
    };
    const fn = lambda.byArn(/\/functions\/(.+)\/invocations$/.exec(String(integration.Uri ?? ''))?.[1] ?? '');
    const authorizationType = String(properties.AuthorizationType ?? 'NONE');
    const validator = properties.RequestValidatorId
      ? validators.get(String(properties.RequestValidatorId))
      : undefined;
    const problems = [
      !node && 'it hangs from no resource of the API',
      (integration.Type !== 'AWS_PROXY' || !fn) &&
        `its integration ${integration.Type} ${integration.Uri ?? ''} is not a Lambda proxy to a function of this template`,
      !['NONE', 'AWS_IAM', 'CUSTOM'].includes(authorizationType) &&
        `authorization ${authorizationType} is not one the rehearsal checks`,
      properties.ApiKeyRequired === true && 'it requires an API key; the rehearsal has no usage plans',
      validator?.body &&
        properties.RequestModels &&
        'its request body is validated against a model, which the rehearsal does not do',
    ].filter((problem): problem is string => typeof problem === 'string');
    if (problems.length > 0 || !node || !fn) {
      findings.push(...problems.map((problem) => `${where}: ${problem}`));
      continue;
    }
    const authorizer =
      authorizationType === 'CUSTOM' ? authorizers.get(String(properties.AuthorizerId)) : undefined;
    if (authorizationType === 'CUSTOM' && !authorizer)
      findings.push(
        `${where}: its authorizer ${String(properties.AuthorizerId)} is not one the rehearsal runs`,
      );
    const requestParameters = (properties.RequestParameters ?? {}) as Record<string, boolean>;
    node.methods.set(String(properties.HttpMethod), {
      logicalId,
      httpMethod: String(properties.HttpMethod),
      resourcePath: node.path,
      authorizationType: authorizationType as MethodModel['authorizationType'],
      authorizer,
      requiredParameters: validator?.parameters
        ? Object.keys(requestParameters).filter((key) => requestParameters[key] === true)
        : [],
      fn,
      timeoutMs: Number(integration.TimeoutInMillis ?? 29_000),
    });
  }

  const gatewayResponses = new Map<string, GatewayResponseModel>();
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::ApiGateway::GatewayResponse').filter(
    ([, r]) => belongs(r.Properties),
  )) {
    const properties = references.resolve(resource.Properties ?? {}, logicalId) as Record<string, unknown>;
    const templates = (properties.ResponseTemplates ?? {}) as Record<string, string>;
    for (const text of Object.values(templates)) {
      const unsupported = unrenderableParts(text);
      if (unsupported.length > 0)
        findings.push(
          `gateway response ${logicalId}: its template uses ${unsupported.join(', ')}, which the rehearsal does not render`,
        );
    }
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(
      (properties.ResponseParameters ?? {}) as Record<string, string>,
    )) {
      const header = /^gatewayresponse\.header\.(.+)$/.exec(key)?.[1];
      const literal = /^'(.*)'$/.exec(value)?.[1];
      if (header && literal !== undefined) headers[header] = literal;
      else
        findings.push(
          `gateway response ${logicalId}: the response parameter ${key}=${value} is not a literal header the rehearsal sets`,
        );
    }
    gatewayResponses.set(String(properties.ResponseType), {
      statusCode: properties.StatusCode as string | undefined,
      templates,
      headers,
    });
  }

  const methodThrottles = new Map<string, Throttle>();
  let stageThrottle: Throttle | undefined;
  for (const setting of (stageProperties.MethodSettings ?? []) as Array<Record<string, unknown>>) {
    if (setting.ThrottlingRateLimit === undefined && setting.ThrottlingBurstLimit === undefined) continue;
    const throttle = {
      rateLimit: Number(setting.ThrottlingRateLimit ?? 10_000),
      burstLimit: Number(setting.ThrottlingBurstLimit ?? 5_000),
    };
    const path = String(setting.ResourcePath ?? '/*').replaceAll('~1', '/');
    if (path === '/*' && setting.HttpMethod === '*') stageThrottle = throttle;
    else methodThrottles.set(`${setting.HttpMethod} ${path}`, throttle);
  }
  throwIfFindings('api', findings);
  return {
    logicalId: apiId,
    restApiId: references.identity(apiId)?.ref as string,
    stageName: String(stageProperties.StageName),
    root,
    gatewayResponses,
    stageThrottle,
    methodThrottles,
  };
}
