import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { draft04, draft04Of, modelProblems, requestModelsOf } from '../../lib/deploy/request-models.ts';
import type { Route } from '../../lib/server/functions/table.ts';

/** The document's 2020-12 schemas in draft-04's words, as API Gateway's models take them. */
describe('a body schema in draft-04', () => {
  it('says const, numeric exclusive bounds, record keys and tuples in draft-04 words', () => {
    const { schema, problems } = draft04Of({
      type: 'object',
      properties: {
        kty: { type: 'string', const: 'OKP' },
        ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
        labels: {
          type: 'object',
          propertyNames: { type: 'string', pattern: '^[a-z]+$' },
          additionalProperties: { type: 'string', const: 'x' },
        },
        pick: {
          type: 'object',
          propertyNames: { type: 'string', enum: ['a', 'b'] },
          additionalProperties: { type: 'integer' },
        },
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false },
      },
    });
    expect(problems).toEqual([]);
    expect(schema).toEqual({
      $schema: draft04,
      type: 'object',
      properties: {
        kty: { type: 'string', enum: ['OKP'] },
        ratio: { type: 'number', minimum: 0, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true },
        labels: {
          type: 'object',
          patternProperties: { '^[a-z]+$': { type: 'string', enum: ['x'] } },
          additionalProperties: false,
        },
        pick: {
          type: 'object',
          properties: { a: { type: 'integer' }, b: { type: 'integer' } },
          additionalProperties: false,
        },
        pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], additionalItems: false },
      },
    });
    expect(modelProblems(schema, 'body')).toEqual([]);
  });

  it('names what API Gateway would refuse: a $ref, a later keyword, a numeric exclusive bound, no $schema', () => {
    expect(
      modelProblems(
        {
          $schema: draft04,
          properties: { a: { $ref: '#/$defs/a' }, b: { const: 1 }, c: { exclusiveMinimum: 2 } },
          items: { $schema: draft04 },
        },
        'body',
      ),
    ).toEqual([
      'body.properties["a"].$ref: a model holds no $ref',
      'body.properties["b"].const: not a draft-04 keyword',
      'body.properties["c"].exclusiveMinimum: a boolean in draft-04',
      'body.items.$schema: only the top names its draft',
    ]);
    expect(modelProblems({ type: 'object' }, 'body')).toEqual([`body: $schema is not ${draft04}`]);
  });

  it('refuses record keys it cannot say, rather than checking less than the handler', () => {
    const route = (path: string, body: z.ZodType): Route => ({
      method: 'POST',
      path,
      auth: 'none',
      handler: path.slice(1),
      request: { body },
    });
    const { models, problems } = requestModelsOf([
      route('/short', z.object({ tags: z.record(z.string().max(3), z.string()) })),
      route('/a', z.object({ n: z.number().int() })),
      route('/b', z.object({ n: z.number().int() })),
    ]);
    expect(problems).toEqual([expect.stringMatching(/^POST \/short: propertyNames .* has no draft-04 form/)]);
    expect(models.map((model) => [model.name, model.routes])).toEqual([['ABody', ['POST /a', 'POST /b']]]);
  });
});
