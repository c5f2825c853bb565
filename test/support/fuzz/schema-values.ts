import fc from 'fast-check';
import * as z from 'zod';

/**
 * Values for a zod schema, made from the schema itself (through its JSON Schema, zod's public
 * description of it), so the fuzz follows the routes' own schemas as they change: valid values,
 * and values broken in one place at a time.
 */
export type JsonSchema = {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly pattern?: string;
  readonly format?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
};

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const jsonSchemaOf = (schema: z.ZodType): JsonSchema =>
  z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;

/**
 * Strings of a field of this name (`field:node`), else matching this pattern, are drawn from
 * the given values most of the time, so a valid request names a node, a module or a token the
 * mesh holds and reaches past the lookups; the rest come from the pattern itself.
 */
export type Pools = ReadonlyMap<string, readonly string[]>;

/** A value the schema accepts (its refinements aside: the caller filters with the schema itself). */
export function validValue(schema: JsonSchema, pools: Pools = new Map(), field?: string): fc.Arbitrary<Json> {
  if (schema.const !== undefined) return fc.constant(schema.const as Json);
  if (schema.enum) return fc.constantFrom(...(schema.enum as Json[]));
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((option) => validValue(option, pools, field)));
  switch (typeOf(schema)) {
    case 'object': {
      const shape = Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, value]) => [key, validValue(value, pools, key)]),
      );
      return fc.record(shape, { requiredKeys: [...(schema.required ?? [])] }) as fc.Arbitrary<Json>;
    }
    case 'string':
      return stringValue(schema, pools, field);
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue() as fc.Arbitrary<Json>;
  }
}

function stringValue(schema: JsonSchema, pools: Pools, field: string | undefined): fc.Arbitrary<Json> {
  if (schema.format === 'date-time')
    return fc
      .date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true })
      .map((date) => date.toISOString());
  if (schema.pattern) {
    const matching = fc.stringMatching(new RegExp(schema.pattern));
    const pool = (field !== undefined ? pools.get(`field:${field}`) : undefined) ?? pools.get(schema.pattern);
    return pool && pool.length > 0
      ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...pool) }, matching)
      : matching;
  }
  return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) });
}

const typeOf = (schema: JsonSchema) => (Array.isArray(schema.type) ? schema.type[0] : schema.type);

/** One way a value is broken: what was done, and the value. */
export type Broken = { readonly what: string; readonly value: Json };

/** Strings a careless or hostile client sends where a name or a value belongs. */
export const hostileStrings: readonly string[] = [
  '',
  ' ',
  'UPPER',
  '-lead',
  'trail-',
  'a'.repeat(64),
  '..',
  '../etc/passwd',
  'a/b',
  'a\u0000b',
  'ünïcödé',
  '😀',
  '\u202eevil',
  '\ud800',
  '__proto__',
  'constructor',
  'toString',
  '<script>',
  "'; drop table --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, sent as it is
  '${jndi:x}',
  '%00',
];

const wrongTypes: ReadonlyArray<[string, Json]> = [
  ['null', null],
  ['true', true],
  ['a number', 12345],
  ['a negative number', -1],
  ['a fraction', 1.5],
  ['a huge number', 1e308],
  ['a string', 'x'],
  ['an array', ['x']],
  ['an object', { x: 1 }],
];

/**
 * The valid value broken in exactly one way: a field dropped, given the wrong type, a hostile
 * or huge string, a number out of range, or an extra field (`__proto__` and `constructor`
 * among them). Fields of nested objects are broken the same way.
 */
export function brokenValue(schema: JsonSchema, valid: Json): fc.Arbitrary<Broken> {
  const options: Array<fc.Arbitrary<Broken>> = [
    fc.constantFrom(...wrongTypes).map(([what, value]) => ({ what: `the whole value is ${what}`, value })),
  ];
  if (isObject(valid)) {
    options.push(
      fc
        .constantFrom('extra', '__proto__', 'constructor', 'prototype', 'toString')
        .chain((key) =>
          fc
            .constantFrom<Json>('x', { polluted: true }, 1, null)
            .map((value) => ({ what: `an extra field ${key}`, value: withKey(valid, key, value) })),
        ),
    );
    for (const [key, child] of Object.entries(schema.properties ?? {})) {
      const present = key in valid;
      if (present && (schema.required ?? []).includes(key))
        options.push(fc.constant({ what: `${key} left out`, value: withoutKey(valid, key) }));
      options.push(
        brokenField(child, present ? (valid[key] as Json) : undefined).map((broken) => ({
          what: `${key}: ${broken.what}`,
          value: withKey(valid, key, broken.value),
        })),
      );
    }
  }
  return fc.oneof(...options);
}

function brokenField(schema: JsonSchema, valid: Json | undefined): fc.Arbitrary<Broken> {
  const options: Array<fc.Arbitrary<Broken>> = [
    fc.constantFrom(...wrongTypes).map(([what, value]) => ({ what, value })),
  ];
  const type = typeOf(schema);
  if (type === 'string' || schema.enum || schema.pattern) {
    options.push(
      fc
        .constantFrom(...hostileStrings)
        .map((value) => ({ what: `hostile string ${JSON.stringify(value)}`, value })),
      fc
        .integer({ min: 1_000, max: 60_000 })
        .map((length) => ({ what: `a ${length}-character string`, value: 'x'.repeat(length) })),
      fc
        .string({ unit: 'grapheme', minLength: 1, maxLength: 30 })
        .map((value) => ({ what: 'a unicode string', value })),
    );
  }
  if (type === 'integer' || type === 'number') {
    options.push(
      fc.constantFrom<Json>(-1, 0.5, 2 ** 53, Number.MAX_VALUE, -Number.MAX_VALUE, '1', '').map((value) => ({
        what: `the number ${JSON.stringify(value)}`,
        value,
      })),
    );
    if (schema.maximum !== undefined)
      options.push(fc.constant({ what: 'one past the maximum', value: schema.maximum + 1 }));
    if (schema.minimum !== undefined)
      options.push(fc.constant({ what: 'one below the minimum', value: schema.minimum - 1 }));
  }
  if (type === 'object' && valid !== undefined) options.push(brokenValue(schema, valid));
  return fc.oneof(...options);
}

const isObject = (value: Json | undefined): value is { [key: string]: Json } =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A copy with `key` set as an own property, `__proto__` included (JSON.parse would make it one). */
function withKey(value: { [key: string]: Json }, key: string, field: Json): { [key: string]: Json } {
  const copy: { [key: string]: Json } = { ...value };
  Object.defineProperty(copy, key, { value: field, enumerable: true, configurable: true, writable: true });
  return copy;
}

function withoutKey(value: { [key: string]: Json }, key: string): { [key: string]: Json } {
  const copy = { ...value };
  delete copy[key];
  return copy;
}
