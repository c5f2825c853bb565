import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { draft04Of, modelProblems } from '../../lib/deploy/request-models.ts';
import { type Assembly, readAssembly, resourcesOfType } from '../../tools/rehearsal/assembly.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';

/**
 * API Gateway's request models, read from the synthesized template (the run's one synthesis,
 * shared with template.test.ts), held to docs/openapi.json as it is checked in: each body's
 * schema there, written in draft-04, is its method's model.
 */
type Operation = { requestBody?: { content: { 'application/json': { schema: Record<string, unknown> } } } };
const document = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const documentBodies = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.entries(operations).flatMap(([method, operation]) =>
    operation.requestBody
      ? [
          {
            key: `${method.toUpperCase()} ${path}`,
            schema: operation.requestBody.content['application/json'].schema,
          },
        ]
      : [],
  ),
);

type Method = { key: string; models: Record<string, { Ref: string }> | undefined; validator: unknown };

let assembly: Assembly;
let methods: Method[];
let models: Map<string, Record<string, unknown>>;

beforeAll(async () => {
  assembly = readAssembly((await cachedSynth({ bundles: false })).cdkOut);
  models = new Map(
    resourcesOfType(assembly.template, 'AWS::ApiGateway::Model').map(([id, model]) => [
      id,
      model.Properties as Record<string, unknown>,
    ]),
  );
  methods = resourcesOfType(assembly.template, 'AWS::ApiGateway::Method').map(([, method]) => {
    // the construct's path names the resource path: …/Api/Default/nodes/{node}/POST/Resource
    const path = String(method.Metadata?.['aws:cdk:path']).split('/Default')[1] as string;
    const segments = path.split('/');
    const verb = segments.at(-2) as string;
    const properties = method.Properties as Record<string, unknown>;
    return {
      key: `${verb} ${segments.slice(0, -2).join('/')}`,
      models: properties.RequestModels as Method['models'],
      validator: properties.RequestValidatorId,
    };
  });
}, 300_000);

describe("the template's request models", () => {
  it("are the document's schemas: every body in docs/openapi.json is its method's model, in draft-04", () => {
    expect(documentBodies.length).toBeGreaterThan(10);
    for (const { key, schema } of documentBodies) {
      const method = methods.find((each) => each.key === key);
      expect(method, key).toBeDefined();
      const ref = method?.models?.['application/json']?.Ref as string;
      expect(models.get(ref)?.Schema, key).toEqual(draft04Of(schema).schema);
      expect(models.get(ref)?.ContentType).toBe('application/json');
      expect(method?.validator, `${key} is validated`).toBeDefined();
    }
  });

  it('are on no method the document gives no body, and every model checks some body', () => {
    const withBody = new Set(documentBodies.map((body) => body.key));
    expect(methods.filter((method) => method.models && !withBody.has(method.key)).map((m) => m.key)).toEqual(
      [],
    );
    const used = new Set(
      methods.flatMap((method) => (method.models ? [method.models['application/json']?.Ref] : [])),
    );
    expect([...models.keys()].filter((id) => !used.has(id))).toEqual([]);
  });

  it("are each accepted by API Gateway's rules: draft-04 keywords only, no $ref, one model per distinct schema", () => {
    for (const [id, model] of models) expect(modelProblems(model.Schema, id), id).toEqual([]);
    const distinct = new Set([...models.values()].map((model) => JSON.stringify(model.Schema)));
    expect(distinct.size).toBe(models.size);
    expect(models.size).toBeLessThan(documentBodies.length);
  });

  it('validate the body and the parameters of each method with a body', () => {
    const validators = resourcesOfType(assembly.template, 'AWS::ApiGateway::RequestValidator');
    expect(validators.map(([, validator]) => validator.Properties)).toEqual([
      expect.objectContaining({ ValidateRequestBody: true, ValidateRequestParameters: true }),
    ]);
  });
});
