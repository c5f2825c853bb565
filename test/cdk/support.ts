import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type NestedStack, Stack, Stage } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { MeshStack, type MeshStackProps } from '../../lib/deploy/mesh-stack.ts';
import { MeshConstructPropsError } from '../../lib/deploy/names.ts';
import { flattenNestedStacks } from '../../tools/rehearsal/nested-stacks.ts';
import { fixtureAslPath, fixtureFunctionsDir, fixtureSpecs } from './fixtures/manifest.ts';

/** An app that skips bundling: construct tests read the template, not the code. */
export const unbundledApp = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

/** The same, with cdk.json's feature flags (policy minimization among them), as `cdk synth` builds it. */
export function unbundledAppAsSynthesized(): App {
  const { context } = JSON.parse(readFileSync(join(import.meta.dirname, '../../cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] } });
}

/** A stack built from the fixture manifest (one function of every kind), without bundling. */
export function fixtureStack(props: Partial<MeshStackProps> = {}) {
  const stack = new MeshStack(unbundledApp(), 'Mesh', {
    specs: fixtureSpecs,
    functionsDir: fixtureFunctionsDir,
    pushFlowAslPath: fixtureAslPath,
    ...props,
  });
  return { stack, template: templateOf(stack) };
}

const unreachable = (): never => {
  throw new Error('the stack is in no app');
};

/**
 * The stack's template with its nested stacks' resources in it, as the rehearsal reads the
 * synthesized assembly (tools/rehearsal/nested-stacks.ts): references across stacks resolved,
 * every logical id as CDK gave it under its own stack.
 */
export function templateOf(stack: MeshStack): Template {
  const nested = new Map<string, NestedStack>(
    [stack.compute, stack.edge, stack.monitoring].map((child) => [
      stack.resolve(child.nestedStackResource?.logicalId) as string,
      child,
    ]),
  );
  // one synthesis for the four templates: Template.fromStack synthesizes the app for each
  const { directory } = Stage.of(stack)?.synth() ?? unreachable();
  const read = (file: string) => JSON.parse(readFileSync(join(directory, file), 'utf8'));
  const flat = flattenNestedStacks(read(stack.templateFile), (id) => {
    const child = nested.get(id);
    return child ? read(child.templateFile) : undefined;
  });
  return Template.fromJSON(flat as Record<string, unknown>);
}

type Resource = { Type: string; Properties: Record<string, unknown> };

/** The one function CDK adds beside the manifest's: the AwsCustomResource provider (the IoT endpoint lookup). */
const customResourceProvider = /^AWS679f53fac002430cb0da5b7982bd2287/;

/**
 * The manifest's functions, by logical id; throws when any other function is in the template
 * than the AwsCustomResource provider, so nothing slips in unnoticed.
 */
export function meshFunctionsOf(template: { findResources(type: string): Record<string, unknown> }) {
  const all = Object.entries(template.findResources('AWS::Lambda::Function') as Record<string, Resource>);
  const strangers = all.filter(
    ([id, fn]) => !customResourceProvider.test(id) && !String(fn.Properties.Description).startsWith('mesh '),
  );
  if (strangers.length > 0)
    throw new Error(`functions outside the manifest: ${strangers.map(([id]) => id).join(', ')}`);
  return all.filter(([id]) => !customResourceProvider.test(id));
}

/** The logical id CloudFormation gives a construct's main resource. */
export function logicalId(_stack: MeshStack, construct: { node: { defaultChild?: unknown } }): string {
  const element = construct.node.defaultChild as { logicalId: string };
  // resolved by the stack the construct is in, which may be a nested one
  return Stack.of(element as never).resolve(element.logicalId) as string;
}

/** Every action a role's policies allow, with the resources each one names (as JSON). */
export function allowed(template: Template, roleLogicalId: string): Map<string, string[]> {
  const policies = Object.values(
    template.findResources('AWS::IAM::Policy') as Record<string, Resource>,
  ).filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${roleLogicalId}"`));
  const actions = new Map<string, string[]>();
  for (const policy of policies) {
    const document = policy.Properties.PolicyDocument as {
      Statement: Array<{ Action: string | string[]; Resource: unknown; Effect: string }>;
    };
    for (const statement of document.Statement) {
      if (statement.Effect !== 'Allow') continue;
      const resources = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
      for (const action of [statement.Action].flat()) {
        actions.set(action, [...(actions.get(action) ?? []), ...resources.map((r) => JSON.stringify(r))]);
      }
    }
  }
  return actions;
}

/** The problems a construct refused its props with, all of them; fails when it built instead. */
export function problemsOf(build: () => unknown): readonly string[] {
  try {
    build();
  } catch (error) {
    if (error instanceof MeshConstructPropsError) return error.problems;
    throw error;
  }
  throw new Error('expected the construct to refuse its props');
}

/**
 * What a role's policies allow, one line per action, resource and the partitions a
 * `dynamodb:LeadingKeys` condition holds it to (`dynamodb:GetItem inventory node#*`), however
 * CDK grouped the statements. `names` gives the resources' logical ids short names; an index
 * is `<table>/index/<name>`, any other resource its ARN pattern.
 */
export function grantsOf(
  template: { findResources(type: string): Record<string, unknown> },
  roleLogicalId: string,
  names: Readonly<Record<string, string>>,
): string[] {
  const policies = Object.values(
    template.findResources('AWS::IAM::Policy') as Record<string, Resource>,
  ).filter((policy) => JSON.stringify(policy.Properties.Roles).includes(`"${roleLogicalId}"`));
  const lines = new Set<string>();
  for (const policy of policies) {
    const document = policy.Properties.PolicyDocument as {
      Statement: Array<{ Effect: string; Action: unknown; Resource: unknown; Condition?: unknown }>;
    };
    for (const statement of document.Statement.filter((candidate) => candidate.Effect === 'Allow')) {
      const condition = statement.Condition as
        | { 'ForAllValues:StringLike'?: { 'dynamodb:LeadingKeys'?: string[] } }
        | undefined;
      const partitions = condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys']?.join(',');
      for (const resource of [statement.Resource].flat()) {
        const json = JSON.stringify(resource);
        const named = Object.entries(names).find(([id]) => json.includes(`"${id}"`))?.[1];
        const index = /\/index\/([\w*-]+)/.exec(json)?.[1];
        const target = named
          ? `${named}${index ? `/index/${index}` : ''}`
          : json.replace(/.*:(topic\/[^"]*)".*/, '$1');
        for (const action of [statement.Action].flat())
          lines.add(`${action} ${target}${partitions ? ` ${partitions}` : ''}`);
      }
    }
  }
  return [...lines].sort();
}
