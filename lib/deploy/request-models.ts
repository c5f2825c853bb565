import { canonicalJson } from '../server/core/canonical.ts';
import { requestBodySchemaOf } from '../server/functions/openapi.ts';
import type { Route } from '../server/functions/table.ts';
import { pascalCase } from './names.ts';

/**
 * API Gateway's request models, made from the schemas docs/openapi.json gives each body. The
 * document speaks JSON Schema 2020-12 (OpenAPI 3.1); a model takes draft-04 only, so each schema
 * is written in draft-04's words, meaning for meaning. What draft-04 cannot say is a problem
 * at synthesis, never a model that checks less than the handler does.
 */

type JsonSchema = Record<string, unknown>;

export const draft04 = 'http://json-schema.org/draft-04/schema#';

/** The keywords a draft-04 schema may hold, and `$schema` at its top. */
const draft04Keywords = new Set([
  '$schema',
  'title',
  'description',
  'default',
  'type',
  'enum',
  'format',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'items',
  'additionalItems',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxProperties',
  'minProperties',
  'required',
  'properties',
  'patternProperties',
  'additionalProperties',
  'dependencies',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
]);

const isSchema = (value: unknown): value is JsonSchema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const mapValues = (record: unknown, each: (schema: JsonSchema) => JsonSchema) =>
  Object.fromEntries(
    Object.entries(record as Record<string, JsonSchema>).map(([key, value]) => [key, each(value)]),
  );

/** A record's keys as draft-04 holds them: a key pattern is a patternProperties entry, a key enum named properties. */
function keysOf(names: JsonSchema, values: JsonSchema, problems: string[]): JsonSchema {
  const { type, pattern, enum: known, ...rest } = names;
  if ((type !== undefined && type !== 'string') || Object.keys(rest).length > 0) {
    problems.push(
      `propertyNames ${JSON.stringify(names)} has no draft-04 form (a string pattern or enum only)`,
    );
    return {};
  }
  if (Array.isArray(known))
    return {
      properties: Object.fromEntries(known.map((key) => [String(key), values])),
      additionalProperties: false,
    };
  return {
    patternProperties: { [typeof pattern === 'string' ? pattern : '.*']: values },
    additionalProperties: false,
  };
}

/** One schema written in draft-04's words; what has no such words goes to `problems`. */
function inDraft04(schema: JsonSchema, problems: string[]): JsonSchema {
  const each = (inner: JsonSchema) => inDraft04(inner, problems);
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    switch (key) {
      case 'const':
        out.enum = [value];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        if (typeof value === 'number') {
          out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
          out[key] = true;
        } else out[key] = value;
        break;
      case 'properties':
      case 'patternProperties':
        out[key] = mapValues(value, each);
        break;
      case 'additionalProperties':
      case 'not':
        out[key] = isSchema(value) ? each(value) : value;
        break;
      case 'items':
        // 2020-12's items after prefixItems is draft-04's additionalItems
        if ('prefixItems' in schema) out.additionalItems = isSchema(value) ? each(value) : value;
        else out.items = isSchema(value) ? each(value) : value;
        break;
      case 'prefixItems':
        out.items = (value as JsonSchema[]).map(each);
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        out[key] = (value as JsonSchema[]).map(each);
        break;
      case 'propertyNames':
        break;
      default:
        out[key] = value;
    }
  }
  if (isSchema(schema.propertyNames)) {
    const values = isSchema(schema.additionalProperties) ? each(schema.additionalProperties) : {};
    Object.assign(out, keysOf(schema.propertyNames, values, problems));
  }
  return out;
}

/** A body schema as API Gateway's model takes it, `$schema` naming draft-04, and what draft-04 cannot say of it. */
export function draft04Of(schema: JsonSchema): { schema: JsonSchema; problems: string[] } {
  const problems: string[] = [];
  return { schema: { $schema: draft04, ...inDraft04(schema, problems) }, problems };
}

/**
 * What API Gateway would refuse in a model, or read other than draft-04 does: a keyword draft-04
 * has not, any `$ref` (a model may only point at another model of the API, by URL), a boolean
 * schema, an exclusive bound given as a number.
 */
export function modelProblems(schema: unknown, where: string, top = true): string[] {
  if (!isSchema(schema)) return [`${where} is ${JSON.stringify(schema)}, not a schema object`];
  const problems: string[] = [];
  if (top && schema.$schema !== draft04) problems.push(`${where}: $schema is not ${draft04}`);
  for (const [key, value] of Object.entries(schema)) {
    const at = `${where}.${key}`;
    if (key === '$ref') problems.push(`${at}: a model holds no $ref`);
    else if (!draft04Keywords.has(key)) problems.push(`${at}: not a draft-04 keyword`);
    else if (key === '$schema' && !top) problems.push(`${at}: only the top names its draft`);
    else if ((key === 'exclusiveMinimum' || key === 'exclusiveMaximum') && typeof value !== 'boolean')
      problems.push(`${at}: a boolean in draft-04`);
    else if (['properties', 'patternProperties'].includes(key))
      for (const [name, inner] of Object.entries(value as JsonSchema))
        problems.push(...modelProblems(inner, `${at}[${JSON.stringify(name)}]`, false));
    else if (['additionalProperties', 'additionalItems'].includes(key) && typeof value !== 'boolean')
      problems.push(...modelProblems(value, at, false));
    else if (key === 'not') problems.push(...modelProblems(value, at, false));
    else if (key === 'items')
      problems.push(
        ...(Array.isArray(value)
          ? value.flatMap((inner, i) => modelProblems(inner, `${at}[${i}]`, false))
          : modelProblems(value, at, false)),
      );
    else if (['allOf', 'anyOf', 'oneOf'].includes(key))
      problems.push(
        ...(value as unknown[]).flatMap((inner, i) => modelProblems(inner, `${at}[${i}]`, false)),
      );
  }
  return problems;
}

/** One model of the API: its name, its draft-04 schema and the routes whose bodies it checks. */
export type RequestModel = {
  readonly name: string;
  readonly schema: JsonSchema;
  readonly routes: readonly string[];
};

const modelNameOf = (route: Route) => `${pascalCase(route.handler)}Body`;

/**
 * Every route's body model, routes whose bodies are the same schema sharing one (each model is
 * a resource of the stack), named after the first route that takes it; and what keeps a body
 * from being a model.
 */
export function requestModelsOf(routes: readonly Route[]): {
  models: RequestModel[];
  problems: string[];
} {
  const models = new Map<string, { name: string; schema: JsonSchema; routes: string[] }>();
  const problems: string[] = [];
  for (const route of routes) {
    const body = requestBodySchemaOf(route);
    if (!body) continue;
    const key = `${route.method} ${route.path}`;
    const { schema, problems: unsaid } = draft04Of(body);
    const found = [...unsaid.map((problem) => `${key}: ${problem}`), ...modelProblems(schema, key)];
    if (found.length > 0) {
      problems.push(...found);
      continue;
    }
    const same = canonicalJson(schema);
    const model = models.get(same);
    if (model) model.routes.push(key);
    else models.set(same, { name: modelNameOf(route), schema, routes: [key] });
  }
  return { models: [...models.values()], problems };
}
