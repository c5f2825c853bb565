import type { CfnResource, CfnTemplate } from './assembly.ts';
import { RehearsalProblem } from './problems.ts';

export type NestedTemplate = CfnTemplate & {
  readonly Outputs?: Record<string, { readonly Value: unknown }>;
};

type Json = unknown;

const isRecord = (value: Json): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A stack and its nested stacks as one template, as if every resource were in the root: each
 * nested stack's `Ref` to a parameter becomes the expression the parent passes it, each
 * `Fn::GetAtt [<nested stack>, Outputs.X]` becomes what the nested stack outputs as X, and the
 * `AWS::CloudFormation::Stack` resources themselves go, and each resource's `aws:cdk:path` reads
 * as if its construct were the root's. Logical ids are kept (CDK derives them
 * from the path under their own stack, so tests and policies name them as they are); two
 * stacks with one logical id are refused. `nestedTemplateOf` reads the template of a nested
 * stack resource (from `aws:asset:path` in a cloud assembly, or from the construct in a test).
 */
export function flattenNestedStacks(
  root: NestedTemplate,
  nestedTemplateOf: (logicalId: string, resource: CfnResource) => NestedTemplate | undefined,
): NestedTemplate {
  const nested = new Map<string, { template: NestedTemplate; parameters: Record<string, Json> }>();
  for (const [logicalId, resource] of Object.entries(root.Resources ?? {})) {
    if (resource.Type !== 'AWS::CloudFormation::Stack') continue;
    const template = nestedTemplateOf(logicalId, resource);
    if (!template) continue;
    const parameters = (resource.Properties?.Parameters ?? {}) as Record<string, Json>;
    nested.set(logicalId, { template: flattenNestedStacks(template, nestedTemplateOf), parameters });
  }

  const outputOf = (stackId: string, name: string, seen: ReadonlySet<string>): Json => {
    const entry = nested.get(stackId) as NonNullable<ReturnType<typeof nested.get>>;
    const output = (entry.template as NestedTemplate).Outputs?.[name];
    if (!output) throw new RehearsalProblem('assembly', `nested stack ${stackId} has no output ${name}`);
    return inNested(stackId, output.Value, seen);
  };

  /** An expression of the root, with nested stacks' outputs replaced by their values. */
  const inRoot = (value: Json, seen: ReadonlySet<string>): Json => {
    if (Array.isArray(value)) return value.map((item) => inRoot(item, seen));
    if (!isRecord(value)) return value;
    const getAtt = value['Fn::GetAtt'];
    if (Array.isArray(getAtt) && nested.has(String(getAtt[0])) && String(getAtt[1]).startsWith('Outputs.')) {
      const key = `${getAtt[0]}.${getAtt[1]}`;
      if (seen.has(key))
        throw new RehearsalProblem('assembly', `nested stack outputs refer to each other: ${key}`);
      return outputOf(String(getAtt[0]), String(getAtt[1]).slice('Outputs.'.length), new Set([...seen, key]));
    }
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inRoot(item, seen)]));
  };

  /** An expression of a nested stack, with its parameters replaced by what the root passes them. */
  const inNested = (stackId: string, value: Json, seen: ReadonlySet<string>): Json => {
    const { template, parameters } = nested.get(stackId) as NonNullable<ReturnType<typeof nested.get>>;
    const passed = (name: string) =>
      Object.hasOwn(parameters, name) && Object.hasOwn(template.Parameters ?? {}, name)
        ? parameters[name]
        : undefined;
    const walk = (item: Json): Json => {
      if (Array.isArray(item)) return item.map(walk);
      if (!isRecord(item)) return item;
      if (typeof item.Ref === 'string' && Object.keys(item).length === 1) {
        const expression = passed(item.Ref);
        if (expression !== undefined) return inRoot(expression, seen);
      }
      const sub = item['Fn::Sub'];
      if (sub !== undefined && Object.keys(item).length === 1) {
        const [text, variables] = Array.isArray(sub)
          ? [String(sub[0]), sub[1] as Record<string, Json>]
          : [String(sub), {}];
        const named = Object.fromEntries(
          [...text.matchAll(/\$\{([^}!.]+)\}/g)]
            .map((match) => match[1] as string)
            .filter((name) => !(name in variables) && passed(name) !== undefined)
            .map((name) => [name, inRoot(passed(name), seen)]),
        );
        const all = {
          ...Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, walk(v)])),
          ...named,
        };
        return { 'Fn::Sub': Object.keys(all).length > 0 ? [text, all] : text };
      }
      return Object.fromEntries(Object.entries(item).map(([key, entry]) => [key, walk(entry)]));
    };
    return walk(value);
  };

  const resources: Record<string, CfnResource> = {};
  const dropNestedDependencies = (resource: CfnResource): CfnResource => {
    const dependsOn = (resource as { DependsOn?: string | string[] }).DependsOn;
    if (dependsOn === undefined) return resource;
    const kept = [dependsOn].flat().filter((id) => !nested.has(id));
    const { DependsOn: _dropped, ...rest } = resource as CfnResource & { DependsOn?: unknown };
    return kept.length > 0 ? ({ ...rest, DependsOn: kept } as CfnResource) : rest;
  };
  const add = (logicalId: string, resource: CfnResource, where: string) => {
    if (logicalId in resources)
      throw new RehearsalProblem(
        'assembly',
        `logical id ${logicalId} is in two stacks (${where} among them)`,
      );
    resources[logicalId] = dropNestedDependencies(resource);
  };
  for (const [logicalId, resource] of Object.entries(root.Resources ?? {})) {
    if (nested.has(logicalId)) continue;
    add(logicalId, inRoot(resource, new Set()) as CfnResource, 'the root');
  }
  const conditions: Record<string, unknown> = { ...(root.Conditions ?? {}) };
  const mappings = { ...(root.Mappings ?? {}) };
  for (const [stackId, { template }] of nested) {
    // `Mesh/Compute.NestedStack/Compute.NestedStackResource` holds the stack `Mesh/Compute`,
    // whose resources read as the root's: `Mesh/Compute/Functions/X` as `Mesh/Functions/X`
    const holder = root.Resources[stackId]?.Metadata?.['aws:cdk:path'];
    const stackPath = typeof holder === 'string' ? /^(.*)\.NestedStack\//.exec(holder)?.[1] : undefined;
    const asInRoot = (resource: CfnResource): CfnResource => {
      const path = resource.Metadata?.['aws:cdk:path'];
      if (!stackPath || typeof path !== 'string' || !path.startsWith(`${stackPath}/`)) return resource;
      const rootPath = `${stackPath.slice(0, stackPath.lastIndexOf('/'))}/${path.slice(stackPath.length + 1)}`;
      return { ...resource, Metadata: { ...resource.Metadata, 'aws:cdk:path': rootPath } };
    };
    // every stack of a CDK app says which constructs it was built from; the root's says it once
    for (const [logicalId, resource] of Object.entries(template.Resources ?? {}))
      if (resource.Type !== 'AWS::CDK::Metadata' || !(logicalId in resources))
        add(logicalId, asInRoot(inNested(stackId, resource, new Set()) as CfnResource), stackId);
    for (const [name, condition] of Object.entries(template.Conditions ?? {})) {
      if (name in conditions && JSON.stringify(conditions[name]) !== JSON.stringify(condition))
        throw new RehearsalProblem('assembly', `condition ${name} differs between stacks (${stackId})`);
      conditions[name] = inNested(stackId, condition, new Set());
    }
    Object.assign(mappings, template.Mappings ?? {});
  }
  const outputs = root.Outputs
    ? Object.fromEntries(
        Object.entries(root.Outputs).map(([name, output]) => [name, inRoot(output, new Set())]),
      )
    : undefined;
  return {
    ...root,
    Resources: resources,
    ...(Object.keys(conditions).length > 0 ? { Conditions: conditions } : {}),
    ...(Object.keys(mappings).length > 0 ? { Mappings: mappings } : {}),
    ...(outputs ? { Outputs: outputs as NestedTemplate['Outputs'] } : {}),
  };
}
