import { readFileSync } from 'node:fs';
import { functionArnPlaceholder } from '../../lib/deploy/names.ts';
import { aslPlaceholders } from '../../lib/deploy/push-flow.ts';
import type { SteppingFlow } from '../../lib/server/flows/stepping-flows.ts';
import type { FunctionSpec } from '../../lib/server/functions/table.ts';
import { type CfnResource, displayName, resourcesOfType } from './assembly.ts';
import type { JudgedStack, RoleMay } from './stack.ts';

/**
 * A stepping flow of the template (lib/deploy/stepping-flow.ts: the rollout's, the apply
 * job's) held to its ASL file: one Standard state machine (its job outlasts Express's five
 * minutes), its definition the file byte for byte, each placeholder filled with the function of
 * the flow's trigger it names and nothing else filled, and its role allowed to invoke each.
 */
export async function checkSteppingFlow(
  stack: JudgedStack,
  specs: readonly FunctionSpec[],
  roleMay: RoleMay,
  flow: SteppingFlow,
): Promise<string[]> {
  const template = stack.assembly.template;
  const machines = resourcesOfType(template, 'AWS::StepFunctions::StateMachine').filter(([id]) =>
    displayName(template, id).startsWith(`${flow.id}/`),
  );
  if (machines.length !== 1)
    return [`the template has ${machines.length} ${flow.trigger}s, where it needs one`];
  const [id, machine] = machines[0] as [string, CfnResource];
  const where = displayName(template, id);
  const p = machine.Properties ?? {};
  const findings: string[] = [];
  if (p.StateMachineType !== 'STANDARD')
    findings.push(`${where}: ${String(p.StateMachineType)}, where ${flow.standardFor} needs STANDARD`);
  const file = readFileSync(flow.aslPath, 'utf8');
  const key = (p.DefinitionS3Location as { Key?: string } | undefined)?.Key;
  const asset = key ? stack.assembly.assetFile(key) : undefined;
  const deployed = asset ? readFileSync(asset, 'utf8') : stringOf(p.Definition ?? p.DefinitionString);
  if (deployed !== file) findings.push(`${where}: its definition is not ${flow.aslFile}`);
  const substitutions = (p.DefinitionSubstitutions ?? {}) as Record<string, unknown>;
  const placeholders = aslPlaceholders(file);
  const role = arnOf(p.RoleArn);
  for (const placeholder of placeholders) {
    const spec = specs.find((candidate) => functionArnPlaceholder(candidate.name) === placeholder);
    const named = [...stack.functions.values()].find(
      (fn) => fn.logicalId === arnOf(substitutions[placeholder]),
    );
    if (spec?.trigger !== flow.trigger || named?.name !== spec.name) {
      findings.push(
        `${where}: \${${placeholder}} is ${named?.name ?? 'no function'}, not ${spec?.name ?? `a ${flow.trigger} function`}`,
      );
      continue;
    }
    if (!role) continue;
    const denied = await roleMay(stack, role, where, {
      action: 'lambda:InvokeFunction',
      resource: named.arn,
    });
    if (denied) findings.push(denied);
  }
  for (const placeholder of Object.keys(substitutions))
    if (!placeholders.includes(placeholder)) findings.push(`${where}: \${${placeholder}} fills no task`);
  return findings;
}

const arnOf = (value: unknown) => /"Fn::GetAtt":\["(\w+)","Arn"\]/.exec(JSON.stringify(value))?.[1];
const stringOf = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
