import * as z from 'zod';
import { labelKey, labelValue } from '../mesh/labels.ts';
import { moduleName, moduleVersion, nodeName, providerKind } from '../names.ts';

/**
 * The mesh file's structure (docs/mesh-file.md), one schema for the parser and for the JSON
 * Schema editors use (docs/mesh-file.schema.json, generated from this and held equal by a test).
 * Objects are strict: an unknown field is a typo until proven otherwise. The checks across
 * fields (references, groups, limits, tests) are in expand.ts and file-tests.ts.
 */

/** `NODE/MODULE`: a provider on a node. */
export const providerRef = z
  .string()
  .regex(
    /^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?\/[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
    'a provider is NODE/MODULE, both DNS labels',
  );

export const labels = z
  .record(labelKey, labelValue)
  .describe('Labels, key: value; selectors pick nodes by them');

export const moduleEntry = z
  .strictObject({
    provides: providerKind
      .optional()
      .describe('Makes the module a provider of this kind (mesh-wide, set once)'),
    consumes: z.array(providerRef).optional().describe('The providers this module uses, NODE/MODULE'),
  })
  .nullable()
  .describe('A module assigned to the node; its version is mesh-wide, under the top-level modules');

export const modules = z.record(moduleName, moduleEntry).describe('Modules by name');

export const nodeEntry = z
  .strictObject({ labels: labels.optional(), modules: modules.optional() })
  .nullable()
  .describe('One node');

/** `web-[001-800]`: a name with numeric ranges in brackets, zero-padded when the start is. */
export const nodePattern = z
  .string()
  .min(1)
  .max(200)
  .describe('A node name, or a pattern with ranges in brackets: web-[001-800]');

export const groupEntry = z
  .strictObject({
    nodes: z
      .union([nodePattern, z.array(nodePattern)], {
        error: 'a group’s nodes are a name or pattern (web-[001-800]), or a list of them',
      })
      .describe('The group’s nodes: a pattern, or a list of names and patterns'),
    labels: labels.optional(),
    modules: modules.optional(),
  })
  .describe('Nodes that look alike: each gets the group’s labels and modules');

/** Most `*` on each side of a pattern: enough for `*-db-*`, and a bound on what a test costs. */
export const maxPatternStars = 4;

/**
 * A path of a module with `*` globs: `web-*\/nginx`. Each side is at most 63 characters (a name's
 * length) with at most four `*`; the matcher is linear whatever the pattern (lib/server/core/glob.ts),
 * and these bounds keep a test's cost to what a name's check costs.
 */
export const modulePattern = z
  .string()
  .regex(
    /^(?=[a-z0-9*-]{1,63}\/)(?:[a-z0-9-]*\*){0,4}[a-z0-9-]*\/(?=[a-z0-9*-]{1,63}$)(?:[a-z0-9-]*\*){0,4}[a-z0-9-]*$/,
    'a pattern is NODE/MODULE, each a name or a glob with * of at most 63 characters and at most 4 *',
  )
  .describe(
    'NODE/MODULE with * matching any run of name characters; each side at most 63 characters and 4 *',
  );

/** Most tests in one file: each is checked against every node, so their number bounds what a plan costs. */
export const maxFileTests = 100;

export const fileTest = z
  .strictObject({
    consumer: modulePattern.optional().describe('Every module matching this must pass the assertion'),
    label: labels.optional().describe('Every node with all these labels must pass the assertion'),
    reaches: modulePattern.optional().describe('...consumes at least one provider matching this'),
    mustNotConsume: modulePattern.optional().describe('...consumes no provider matching this'),
  })
  .describe('A test checked at plan time: one of consumer or label, one of reaches or mustNotConsume');

/** A module's mesh-wide settings: its version, as `mesh upgrade MODULE VERSION` sets it. */
export const moduleSettings = z
  .strictObject({
    version: moduleVersion.describe(
      'The version every node carrying the module runs: set as mesh upgrade sets it',
    ),
  })
  .describe('A module of the mesh, by name: what holds for it on every node');

export const meshFileSchema = z
  .strictObject({
    version: z.literal(1).describe('The file format’s version'),
    modules: z
      .record(moduleName, moduleSettings)
      .optional()
      .describe('Modules by name, mesh-wide: each one assigned to some node of the file'),
    nodes: z.record(nodeName, nodeEntry).optional().describe('Nodes by name'),
    groups: z.record(nodeName, groupEntry).optional().describe('Groups by name'),
    tests: z
      .array(fileTest)
      .max(maxFileTests)
      .optional()
      .describe(`Tests checked at plan time, at most ${maxFileTests}`),
  })
  .describe('The mesh as a file: `mesh apply -f FILE` makes the mesh match it (docs/mesh-file.md)');

export type MeshFile = z.infer<typeof meshFileSchema>;
export type ModuleEntry = NonNullable<z.infer<typeof moduleEntry>>;
export type FileTest = z.infer<typeof fileTest>;

/** The JSON Schema of the file, as docs/mesh-file.schema.json holds it. */
export function meshFileJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(meshFileSchema, { target: 'draft-2020-12' }),
    title: 'Mesh file',
  };
}
