import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aslPlaceholders } from '../../lib/deploy/push-flow.ts';
import {
  localFunctionArn,
  pushTasks,
  readPushDefinition,
  substitutePushDefinition,
  substitutionFor,
} from '../../lib/server/flows/push-definition.ts';
import { routes } from '../../lib/server/functions/table.ts';
import { readAssembly } from '../../tools/rehearsal/assembly.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
};
type CfnTemplate = { Resources: Record<string, Resource>; Outputs?: Record<string, unknown> };

/**
 * The real app, synthesized the way `npm run synth` does it: the cdk CLI, cdk.json, bin/cdk-app.ts,
 * cdk-nag AwsSolutions as a validation plugin (an unacknowledged finding fails the synthesis),
 * but without the functions' bundles (`--context bundle=false`): nothing here reads their code,
 * and test/package/function-bundles.test.ts holds the bundles. Offline: no credentials, no
 * lookups. One synthesis per state of its inputs, shared with test/cdk/template.test.ts and the
 * rehearsal's judge (tools/rehearsal/synth.ts).
 */
let outdir: string;
let template: CfnTemplate;
let synthOutput = '';

beforeAll(async () => {
  const synth = await cachedSynth({ bundles: false });
  outdir = synth.cdkOut;
  synthOutput = synth.output;
  // the root stack with its nested stacks' resources in it
  template = readAssembly(outdir).template as CfnTemplate;
}, 300_000);

const resourcesOf = (type: string) =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);

/** The manifest name of a synthesized function, from the description MeshFunctions gives it. */
const functionNameOf = (resource: Resource) =>
  /^mesh ([a-z0-9-]+):/.exec(String(resource.Properties.Description))?.[1];

describe('cdk synth of the real app', () => {
  it('passes cdk-nag AwsSolutions with no unacknowledged finding', () => {
    expect(synthOutput).not.toMatch(/\bERROR\b/);
    const reportPath = join(outdir, 'validation-report.json');
    const report = existsSync(reportPath)
      ? (JSON.parse(readFileSync(reportPath, 'utf8')) as { pluginReports: Array<{ violations?: unknown[] }> })
      : { pluginReports: [] };
    expect(report.pluginReports.flatMap((plugin) => plugin.violations ?? [])).toEqual([]);
  });

  it('gives every acknowledged finding its reason', () => {
    const acknowledged = Object.values(template.Resources).flatMap(
      (resource) =>
        (
          resource.Metadata?.cdk_nag as
            | { rules_to_suppress?: Array<{ id: string; reason: string }> }
            | undefined
        )?.rules_to_suppress ?? [],
    );
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const rule of acknowledged) expect(rule.reason.length, rule.id).toBeGreaterThan(20);
  });

  it('serves one method per route of the route table', () => {
    const methods = resourcesOf('AWS::ApiGateway::Method').filter(
      ([, m]) => m.Properties.HttpMethod !== 'OPTIONS',
    );
    expect(methods).toHaveLength(routes.length);
  });

  it('outputs the API URL, and where hosts reach the broker', () => {
    expect(Object.keys(template.Outputs ?? {})).toEqual(
      expect.arrayContaining(['ApiUrl', 'SignalBrokerUrl', 'SignalAuthorizerName']),
    );
  });
});

describe('the push flow deployed by CDK', () => {
  it('is the ASL the local runtime executes, the function ARNs aside', () => {
    // the others are the stepping flows: the rollout's and the apply job's (lib/server/flows/stepping-flows.ts)
    const machines = resourcesOf('AWS::StepFunctions::StateMachine').filter(
      ([id]) => !id.startsWith('RolloutFlow') && !id.startsWith('ApplyFlow'),
    );
    expect(machines).toHaveLength(1);
    const [, machine] = machines[0] as [string, Resource];
    const location = machine.Properties.DefinitionS3Location as { Key: string };
    const deployedText = readFileSync(join(outdir, `asset.${location.Key}`), 'utf8');
    expect(deployedText).toBe(readPushDefinition());

    const nameByLogicalId = new Map(
      resourcesOf('AWS::Lambda::Function').map(([id, fn]) => [id, functionNameOf(fn) as string]),
    );
    const substitutions = machine.Properties.DefinitionSubstitutions as Record<
      string,
      { 'Fn::GetAtt': [string, string] }
    >;
    expect(Object.keys(substitutions).sort()).toEqual(aslPlaceholders(deployedText).sort());
    let deployed = deployedText;
    for (const [placeholder, arn] of Object.entries(substitutions)) {
      const name = nameByLogicalId.get(arn['Fn::GetAtt'][0]) as string;
      expect(substitutionFor(name)).toBe(placeholder);
      deployed = deployed.replaceAll(`\${${placeholder}}`, localFunctionArn(name));
    }
    const local = substitutePushDefinition(readPushDefinition(), localFunctionArn);
    expect(JSON.parse(deployed)).toEqual(JSON.parse(local));
    expect(Object.values(pushTasks).map(substitutionFor).sort()).toEqual(Object.keys(substitutions).sort());
  });
});
