import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  AuthorizationType,
  EndpointType,
  IdentitySource,
  type JsonSchema,
  LambdaIntegration,
  LogGroupLogDestination,
  type Method,
  MethodLoggingLevel,
  type MethodOptions,
  type Model,
  RequestAuthorizer,
  RequestValidator,
  ResponseType,
  RestApi,
} from 'aws-cdk-lib/aws-apigateway';
import { type IFunction, Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { storeRetryAfterSeconds } from '../server/api/problem.ts';
import { defaultMaxSkewSeconds } from '../server/core/host-identity/proof.ts';
import { type FunctionSpec, type Route, routesOf } from '../server/functions/table.ts';
import { budgetProblems, methodBudgets, type RouteBudgets, routeBudgets } from './api-budgets.ts';
import { acknowledge } from './nag.ts';
import { throwIfProblems } from './names.ts';
import { requestModelsOf } from './request-models.ts';

export type ControlPlaneApiProps = {
  /** The functions (lib/server/functions/table.ts): one method per 'api' row's route, the 'authorizer' row in front of host routes. */
  readonly specs: readonly FunctionSpec[];
  /** The built function for a manifest name. */
  readonly functionNamed: (name: string) => IFunction;
  /**
   * Headers the host authorizer needs; API Gateway answers 401 without calling it when one is missing.
   * @default ['Authorization']
   */
  readonly hostIdentityHeaders?: readonly string[];
  /**
   * Each kind of caller's budget, on each of its methods (lib/deploy/api-budgets.ts).
   * @default defaultRouteBudgets: operator 20/s (burst 40), host 100/s (200), token 5/s (10), none 5/s (10)
   */
  readonly budgets?: Partial<RouteBudgets>;
  /** @default 'v1' */
  readonly stageName?: string;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
};

/** Everything wrong with the functions' routes and authorizer, in one list. */
function routeProblems(specs: readonly FunctionSpec[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const routes = routesOf(specs);
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    if (seen.has(key)) problems.push(`route ${key} is listed twice`);
    seen.add(key);
    if (!/^\/([\w.-]+|\{\w+\})(\/([\w.-]+|\{\w+\}))*$/.test(route.path))
      problems.push(`route ${key} is not an API Gateway resource path`);
  }
  const authorizers = specs.filter((spec) => spec.trigger === 'authorizer').map((spec) => spec.name);
  if (authorizers.length > 1)
    problems.push(
      `host routes have one authorizer, but ${authorizers.join(', ')} are all trigger 'authorizer'`,
    );
  const hostRoutes = routes.filter((route) => route.auth === 'host');
  if (hostRoutes.length > 0 && authorizers.length === 0)
    problems.push(
      `routes ${hostRoutes.map((route) => `${route.method} ${route.path}`).join(', ')} need the host authorizer, and none is given`,
    );
  return problems;
}

/**
 * The REST API, built from the route table. Policy fixed here: IAM (SigV4) on operator
 * routes, the host authorizer on host routes, each kind of caller's budget on its methods,
 * request validation on every method, access logs and execution logs, tracing, and
 * problem-shaped gateway errors so `mesh` reads API Gateway's own refusals like the handlers'
 * ones. Per-address limits are the firewall's (ApiFirewall, attached by MeshStack).
 */
export class ControlPlaneApi extends Construct {
  public readonly api: RestApi;
  public readonly accessLogs: LogGroup;
  public readonly authorizer: RequestAuthorizer | undefined;
  public readonly methods: ReadonlyMap<string, Method>;
  /** The deployment stage's name, as a string (the stage's own is a token). */
  public readonly stageName: string;

  constructor(scope: Construct, id: string, props: ControlPlaneApiProps) {
    super(scope, id);
    const budgets = routeBudgets(props.budgets);
    const routes = routesOf(props.specs);
    const hostAuthorizer = props.specs.find((spec) => spec.trigger === 'authorizer')?.name;
    const requestModels = requestModelsOf(routes);
    throwIfProblems('ControlPlaneApi', [
      ...routeProblems(props.specs),
      ...requestModels.problems,
      ...budgetProblems(budgets),
      ...(props.hostIdentityHeaders?.length === 0 ? ['hostIdentityHeaders may not be empty'] : []),
    ]);

    this.stageName = props.stageName ?? 'v1';
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.api = new RestApi(this, 'Api', {
      restApiName: 'mesh',
      description: 'Mesh control plane',
      endpointConfiguration: { types: [EndpointType.REGIONAL] },
      // The role API Gateway logs with is the account's, one for every API in the region: it
      // stays when the stack goes, or every other API of the account would stop logging.
      cloudWatchRole: true,
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: this.stageName,
        accessLogDestination: new LogGroupLogDestination(this.accessLogs),
        accessLogFormat: AccessLogFormat.jsonWithStandardFields(),
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
        methodOptions: methodBudgets(routes, budgets),
      },
    });
    // the stack outputs the URL under one stable name (ApiUrl); RestApi's own output would repeat it
    this.api.node.tryRemoveChild('Endpoint');
    for (const type of [ResponseType.DEFAULT_4XX, ResponseType.DEFAULT_5XX]) {
      this.api.addGatewayResponse(type === ResponseType.DEFAULT_4XX ? 'Problem4xx' : 'Problem5xx', {
        type,
        templates: {
          'application/json':
            '{"error":{"code":"$context.error.responseType","message":$context.error.messageString}}',
        },
      });
    }
    // The host authorizer throws only when the identity store cannot be read: "try again".
    // API Gateway answers an authorizer Lambda that throws with AUTHORIZER_CONFIGURATION_ERROR,
    // and one it cannot get an answer from with AUTHORIZER_FAILURE: both are the same 503.
    for (const [id, type] of [
      ['AuthorizerUnavailable', ResponseType.AUTHORIZER_FAILURE],
      ['AuthorizerThrew', ResponseType.AUTHORIZER_CONFIGURATION_ERROR],
    ] as const) {
      this.api.addGatewayResponse(id, {
        type,
        statusCode: '503',
        responseHeaders: { 'Retry-After': `'${storeRetryAfterSeconds}'` },
        templates: {
          'application/json':
            '{"error":{"code":"try_again","message":"the control plane cannot reach its store; try again"}}',
        },
      });
    }
    const validator = new RequestValidator(this, 'Validator', {
      restApi: this.api,
      validateRequestBody: true,
      validateRequestParameters: true,
    });
    // Each body is checked against docs/openapi.json's schema (in draft-04's words) before a
    // function is called: a bad body costs no invocation. The handler checks it again, as the
    // local runtime has no gateway in front of it.
    const modelOf = new Map<string, Model>();
    for (const { name, schema, routes: using } of requestModels.models) {
      const model = this.api.addModel(name, {
        modelName: name,
        contentType: 'application/json',
        description: `The body of ${using.join(', ')} (docs/openapi.json)`,
        schema: schema as JsonSchema,
      });
      for (const key of using) modelOf.set(key, model);
    }

    this.authorizer = hostAuthorizer
      ? new RequestAuthorizer(this, 'HostAuthorizer', {
          // Seen from here by its ARN, so the permission API Gateway needs to invoke it is made
          // in this construct's stack: made beside the function, it would need the API's ARN there,
          // and the function's stack and the API's would each wait for the other.
          handler: LambdaFunction.fromFunctionAttributes(this, 'HostAuthorizerFunction', {
            functionArn: props.functionNamed(hostAuthorizer).functionArn,
            sameEnvironment: true,
          }),
          identitySources: (props.hostIdentityHeaders ?? ['Authorization']).map((header) =>
            IdentitySource.header(header),
          ),
          // Cached by the proof, which signs one request and is spent once: a cached answer only
          // ever serves a replay of that very header (refused again by the handler's replay
          // guard), so a replayed or made-up header costs no call. Kept as long as a proof is
          // accepted at all.
          resultsCacheTtl: Duration.seconds(defaultMaxSkewSeconds),
        })
      : undefined;

    const methods = new Map<string, Method>();
    for (const route of routes) {
      const resource = this.api.root.resourceForPath(route.path);
      const pathParameters = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
      const method = resource.addMethod(
        route.method,
        new LambdaIntegration(props.functionNamed(route.handler), { allowTestInvoke: false }),
        {
          ...this.authorization(route),
          requestValidator: validator,
          ...(modelOf.has(`${route.method} ${route.path}`)
            ? { requestModels: { 'application/json': modelOf.get(`${route.method} ${route.path}`) as Model } }
            : {}),
          requestParameters: Object.fromEntries(
            pathParameters.map((name) => [`method.request.path.${name}`, true]),
          ),
        },
      );
      this.suppressAuthorizationFindings(method, route);
      methods.set(`${route.method} ${route.path}`, method);
    }
    this.methods = methods;

    acknowledge(this.api, {
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason:
        "API Gateway's account-level CloudWatch role: AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS provides for exactly this",
    });
  }

  private authorization(route: Route): MethodOptions {
    switch (route.auth) {
      case 'operator':
        return { authorizationType: AuthorizationType.IAM };
      case 'host':
        return this.authorizer
          ? { authorizationType: AuthorizationType.CUSTOM, authorizer: this.authorizer }
          : { authorizationType: AuthorizationType.NONE };
      case 'token':
      case 'none':
        return { authorizationType: AuthorizationType.NONE };
    }
  }

  private suppressAuthorizationFindings(method: Method, route: Route): void {
    const why: Record<Route['auth'], string> = {
      operator: 'operators sign with SigV4 (IAM authorization), not Cognito',
      host: 'hosts prove possession of their enrolled key through the host authorizer; they have no Cognito identity',
      token:
        'the one-time enrolment token in the body is the authentication, checked by the handler; the method is throttled',
      none: 'open routes that read nothing: the health check and the API document, which the published repository holds too',
    };
    acknowledge(
      method,
      { id: 'AwsSolutions-COG4', reason: why[route.auth] },
      ...(route.auth === 'token' || route.auth === 'none'
        ? [{ id: 'AwsSolutions-APIG4', reason: why[route.auth] }]
        : []),
    );
  }
}
