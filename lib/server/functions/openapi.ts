import { type ZodType, z } from 'zod';
import type { Route } from './table.ts';

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the route table alone: every row's method,
 * path, authentication and role, and the zod schemas its handler validates with. Nothing here is
 * written by hand per route, so the document cannot say what the handlers do not check.
 */
export type OpenApiDocument = {
  readonly openapi: '3.1.0';
  readonly info: Record<string, unknown>;
  readonly servers: readonly Record<string, unknown>[];
  readonly security: readonly Record<string, readonly string[]>[];
  readonly tags: readonly { readonly name: string; readonly description: string }[];
  readonly paths: Record<string, Record<string, unknown>>;
  readonly components: Record<string, unknown>;
};

type JsonSchema = Record<string, unknown>;

/** How each kind of caller proves itself (docs/http-api.md, "Authentication"). */
const securitySchemes = {
  sigv4: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      'AWS Signature Version 4 (IAM): the caller needs execute-api:Invoke on the route, which the MeshViewer, MeshOperator and MeshAdmin managed policies grant by x-mesh-role.',
    'x-amazon-apigateway-authtype': 'awsSigv4',
  },
  hostProof: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      "A proof of possession of the node's enrolled key, signed over the method, URL and body (docs/http-api.md, host proof of possession).",
  },
} as const;

/** Where a role's callers are told apart: only an operator route has a role. */
const securityOf = (route: Route) => {
  if (route.auth === 'operator') return [{ sigv4: [] }];
  if (route.auth === 'host') return [{ hostProof: [] }];
  // the token is the body's own field; health is open
  return [];
};

const tagOf = (route: Route) => route.path.split('/')[1] || 'health';

const tagDescriptions: Record<string, string> = {
  audit: 'the audit records and their chain',
  builds: 'build results and retractions on the control queue',
  'catch-up': 'a catch-up request on the control queue',
  'dead-letters': 'what the control queue let go',
  enrol: "a host's enrolment with its one-time token",
  freezes: "operators' holds on nodes",
  graph: 'the mesh as nodes and relations',
  health: 'whether the API is up',
  hosts: "a host's own routes, proven with its enrolled key",
  mesh: 'the mesh file: export, plan, uploads and apply',
  nodes: 'nodes, their modules, relations, tokens and enrolment',
  'openapi.json': 'this document',
  push: 'pushes and their plans',
  pushes: 'the records of pushes',
  rollouts: 'pushes and upgrades in waves',
  status: 'every node with what it was sent and applied',
  summary: 'the counts of the mesh',
  upgrades: 'module upgrades on the control queue',
};

/** A schema as a request takes it: what a client sends, before defaults and coercion. */
const jsonSchemaOf = (schema: ZodType): JsonSchema => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
};

/** The JSON Schema (2020-12) the document gives a route's body, if the route takes one. */
export const requestBodySchemaOf = (route: Route): JsonSchema | undefined =>
  route.request?.body ? jsonSchemaOf(route.request.body) : undefined;

const pathParameterNames = (path: string) =>
  [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);

const propertiesOf = (
  schema: JsonSchema,
): { properties: Record<string, JsonSchema>; required: string[] } => ({
  properties: (schema.properties ?? {}) as Record<string, JsonSchema>,
  required: (schema.required ?? []) as string[],
});

function parametersOf(route: Route): unknown[] {
  const path = route.request?.path ? propertiesOf(jsonSchemaOf(route.request.path)) : undefined;
  const inPath = pathParameterNames(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: path?.properties[name] ?? { type: 'string' },
  }));
  const query = route.request?.query ? propertiesOf(jsonSchemaOf(route.request.query)) : undefined;
  const inQuery = Object.entries(query?.properties ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: query?.required.includes(name) ?? false,
    schema,
  }));
  return [...inPath, ...inQuery];
}

const operationIdOf = (route: Route) =>
  route.handler.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

const problemAnswer = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

function operationOf(route: Route) {
  const parameters = parametersOf(route);
  const body = requestBodySchemaOf(route);
  return {
    operationId: operationIdOf(route),
    summary: `${route.method} ${route.path}`,
    description: `Served by the function \`${route.handler}\` (functions/${route.handler}.ts).${
      route.role ? ` Callers need the ${route.role} role (x-mesh-role).` : ''
    }`,
    tags: [tagOf(route)],
    ...(route.role ? { 'x-mesh-role': route.role } : {}),
    'x-mesh-auth': route.auth,
    security: securityOf(route),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: body } },
          },
        }
      : {}),
    responses: {
      '200': {
        description: "Done; docs/http-api.md gives each route's answer (some answer 201, 202 or 304).",
        content: { 'application/json': { schema: { type: 'object' } } },
      },
      '4XX': problemAnswer(
        'The request is refused: the problem says what is wrong, and nothing was written.',
      ),
      '5XX': problemAnswer(
        'Try again (503, with Retry-After) or an internal error whose message is never sent.',
      ),
    },
  };
}

export function openApiDocument(routes: readonly Route[], version: string): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    (paths[route.path] as Record<string, unknown>)[route.method.toLowerCase()] = operationOf(route);
  }
  const tags = [...new Set(routes.map(tagOf))]
    .sort()
    .map((name) => ({ name, description: tagDescriptions[name] ?? name }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mesh HTTP API',
      version,
      description:
        'Generated from the route table (lib/server/functions/*.ts) by `npm run openapi`; docs/http-api.md says what each route answers.',
      license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
    },
    servers: [
      { url: 'http://127.0.0.1:4600', description: 'the local runtime (npm start)' },
      {
        url: 'https://{api}.execute-api.{region}.amazonaws.com/v1',
        description: "a deployed stack's ApiUrl",
        variables: { api: { default: 'api-id' }, region: { default: 'eu-west-1' } },
      },
    ],
    security: [{ sigv4: [] }],
    tags,
    paths,
    components: {
      securitySchemes,
      schemas: {
        Problem: {
          type: 'object',
          description:
            'Every refusal and failure: a stable code, a message for people, and details when there are some.',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', description: 'stable; docs/codes.md lists them' },
                message: { type: 'string' },
                details: {},
              },
            },
          },
        },
      },
    },
  };
}

/** The document as docs/openapi.json holds it. */
export const openApiText = (document: OpenApiDocument) => `${JSON.stringify(document, null, 2)}\n`;
