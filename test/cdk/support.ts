import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { MeshStack, type MeshStackProps } from '../../lib/constructs/mesh-stack.ts';
import { fixtureAslPath, fixtureFunctionsDir, fixtureSpecs } from './fixtures/manifest.ts';

/** An app that skips bundling: construct tests read the template, not the code. */
export const unbundledApp = () => new App({ context: { 'aws:cdk:bundling-stacks': [] } });

/** A stack built from the fixture manifest (one function of every kind), without bundling. */
export function fixtureStack(props: Partial<MeshStackProps> = {}) {
  const stack = new MeshStack(unbundledApp(), 'Mesh', {
    specs: fixtureSpecs,
    functionsDir: fixtureFunctionsDir,
    pushFlowAslPath: fixtureAslPath,
    ...props,
  });
  return { stack, template: Template.fromStack(stack) };
}

type Resource = { Type: string; Properties: Record<string, unknown> };

/** The logical id CloudFormation gives a construct's main resource. */
export function logicalId(stack: MeshStack, construct: { node: { defaultChild?: unknown } }): string {
  const element = construct.node.defaultChild as { logicalId: string };
  return stack.resolve(element.logicalId) as string;
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
