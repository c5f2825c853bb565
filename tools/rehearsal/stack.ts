import { type Assembly, displayName, readAssembly, resourcesOfType } from './assembly.ts';
import type { AccessRequest } from './iam-check.ts';
import { IamCheck } from './iam-check.ts';
import { TemplatePolicies } from './iam-policies.ts';
import { identitiesOf, type RehearsalEnvironment } from './identities.ts';
import { References, referencedId } from './references.ts';

/** A function of the template, found by the row of lib/server/functions/table.ts it was built from. */
export type StackFunction = {
  readonly name: string;
  readonly logicalId: string;
  readonly roleLogicalId: string;
  readonly displayName: string;
  readonly arn: string;
};

/** The synthesized stack as the judge reads it: its names and ARNs, its policies, its functions by row. */
export type JudgedStack = {
  readonly assembly: Assembly;
  readonly references: References;
  readonly iam: IamCheck;
  readonly functions: ReadonlyMap<string, StackFunction>;
  /** The physical name of a table or queue of the template, by its construct path (`Tables/Inventory`). */
  physicalName(path: string): string | undefined;
};

/** MeshFunctions describes each function `mesh <row name>: <purpose>`. */
const rowOf = (description: unknown) => /^mesh ([a-z0-9-]+):/.exec(String(description ?? ''))?.[1];

/** Reads a cloud assembly (cdk.out) into the names, ARNs and policies calls are judged against. */
export function readStack(cdkOut: string): JudgedStack {
  return stackOf(readAssembly(cdkOut));
}

/** The same, of an assembly read already (or changed in memory, to see a check fail). */
export function stackOf(assembly: Assembly): JudgedStack {
  const env: RehearsalEnvironment = {
    stackName: assembly.stackName,
    region: assembly.region ?? 'us-east-1',
    account: assembly.account ?? '000000000000',
    partition: 'aws',
    urlSuffix: 'amazonaws.com',
  };
  const template = assembly.template;
  const references = new References(template, env, identitiesOf(template, env));
  const iam = new IamCheck(new TemplatePolicies(references), references);
  const functions = new Map<string, StackFunction>();
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::Lambda::Function')) {
    const name = rowOf(resource.Properties?.Description);
    const roleLogicalId = referencedId(resource.Properties?.Role);
    if (!name || !roleLogicalId) continue;
    functions.set(name, {
      name,
      logicalId,
      roleLogicalId,
      displayName: displayName(template, logicalId),
      arn: references.identity(logicalId)?.attributes.Arn as string,
    });
  }
  return {
    assembly,
    references,
    iam,
    functions,
    physicalName: (path) => {
      const found = Object.keys(template.Resources).find((id) => displayName(template, id) === path);
      return found ? references.identity(found)?.ref.split('/').at(-1) : undefined;
    },
  };
}

/** Whether a role of the stack may make a request: undefined when it may, else why not (template-checks.ts's `roleMay`). */
export type RoleMay = (
  stack: JudgedStack,
  roleLogicalId: string,
  label: string,
  request: AccessRequest,
) => Promise<string | undefined>;
