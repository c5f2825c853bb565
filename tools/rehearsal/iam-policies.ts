import { displayName, resourcesOfType } from './assembly.ts';
import { awsManagedPolicy } from './aws-managed-policies.ts';
import { RehearsalProblem } from './problems.ts';
import { type References, referencedId } from './references.ts';

export type PolicyStatement = {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Principal?: unknown;
  readonly Action?: string | string[];
  readonly NotAction?: string | string[];
  readonly Resource?: string | string[];
  readonly NotResource?: string | string[];
  readonly Condition?: Record<string, Record<string, unknown>>;
};
export type PolicyDocument = { readonly Version?: string; readonly Statement: PolicyStatement[] };
export type NamedPolicy = { readonly name: string; readonly policy: PolicyDocument };

const asList = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

const statementsOf = (document: unknown): PolicyDocument => {
  const policy = document as { Version?: string; Statement?: PolicyStatement | PolicyStatement[] };
  return { Version: policy.Version ?? '2012-10-17', Statement: asList(policy.Statement) };
};

/**
 * The IAM policies of a template, resolved to the rehearsal's ARNs: each role's identity
 * policies and trust policy, and the resource policies of queues (AWS::SQS::QueuePolicy) and
 * functions (AWS::Lambda::Permission). What the rehearsal cannot read (an AWS-managed policy
 * it does not know, aws-managed-policies.ts; a permissions boundary) is a problem, not a
 * silent allow or deny.
 */
export class TemplatePolicies {
  readonly #references: References;
  readonly #identity = new Map<string, NamedPolicy[]>();
  readonly #resource = new Map<string, PolicyStatement[]>();

  constructor(references: References) {
    this.#references = references;
    this.#readIdentityPolicies();
    this.#readResourcePolicies();
  }

  /** The identity policies attached to a role of the template; throws when one cannot be read. */
  identityPolicies(roleLogicalId: string): NamedPolicy[] {
    const role = this.#references.template.Resources[roleLogicalId];
    const where = `role ${displayName(this.#references.template, roleLogicalId)}`;
    const properties = role?.Properties ?? {};
    if (properties.PermissionsBoundary !== undefined)
      throw new RehearsalProblem(
        'iam',
        `${where} has a permissions boundary, which the rehearsal does not evaluate`,
      );
    const managed: NamedPolicy[] = [];
    for (const arn of asList(properties.ManagedPolicyArns)) {
      const id = referencedId(arn);
      const policy = id ? this.#identity.get(`managed:${id}`) : undefined;
      if (policy) {
        managed.push(...policy);
        continue;
      }
      const resolved = this.#references.resolveString(arn, where);
      const published = awsManagedPolicy(resolved);
      if (!published)
        throw new RehearsalProblem(
          'iam',
          `${where} has the managed policy ${resolved}, which is not in the template: the rehearsal cannot read it`,
        );
      managed.push({ name: resolved, policy: published });
    }
    const inline = asList(properties.Policies as Array<{ PolicyName: string; PolicyDocument: unknown }>).map(
      (entry) => ({
        name: String(entry.PolicyName),
        policy: statementsOf(this.#references.resolve(entry.PolicyDocument, `${where} Policies`)),
      }),
    );
    return [...inline, ...managed, ...(this.#identity.get(roleLogicalId) ?? [])];
  }

  trustPolicy(roleLogicalId: string): PolicyDocument {
    const role = this.#references.template.Resources[roleLogicalId];
    return statementsOf(
      this.#references.resolve(
        role?.Properties?.AssumeRolePolicyDocument ?? {},
        `role ${roleLogicalId} trust`,
      ),
    );
  }

  /** The resource policy on a queue or function, by its ARN; undefined when it has none. */
  resourcePolicy(arn: string): PolicyDocument | undefined {
    const statements = this.#resource.get(arn);
    return statements ? { Version: '2012-10-17', Statement: statements } : undefined;
  }

  /** Every policy document the rehearsal evaluates, to find condition keys it does not supply. */
  everyDocument(): Array<{ where: string; policy: PolicyDocument }> {
    const documents: Array<{ where: string; policy: PolicyDocument }> = [];
    for (const [key, policies] of this.#identity)
      for (const { name, policy } of policies) documents.push({ where: `policy ${name} (${key})`, policy });
    for (const [arn, statements] of this.#resource)
      documents.push({ where: `resource policy of ${arn}`, policy: { Statement: statements } });
    for (const [roleId] of resourcesOfType(this.#references.template, 'AWS::IAM::Role'))
      documents.push({ where: `trust policy of role ${roleId}`, policy: this.trustPolicy(roleId) });
    return documents;
  }

  #attach(key: string, policy: NamedPolicy) {
    this.#identity.set(key, [...(this.#identity.get(key) ?? []), policy]);
  }

  #readIdentityPolicies() {
    const template = this.#references.template;
    for (const type of ['AWS::IAM::Policy', 'AWS::IAM::ManagedPolicy']) {
      for (const [logicalId, resource] of resourcesOfType(template, type)) {
        const properties = resource.Properties ?? {};
        const named: NamedPolicy = {
          name: String(properties.PolicyName ?? properties.ManagedPolicyName ?? logicalId),
          policy: statementsOf(this.#references.resolve(properties.PolicyDocument, logicalId)),
        };
        if (type === 'AWS::IAM::ManagedPolicy') this.#attach(`managed:${logicalId}`, named);
        for (const role of asList(properties.Roles)) {
          const roleId = referencedId(role) ?? this.#references.logicalIdFor(String(role));
          if (roleId) this.#attach(roleId, named);
        }
      }
    }
  }

  #addResourceStatements(arn: string, statements: PolicyStatement[]) {
    this.#resource.set(arn, [...(this.#resource.get(arn) ?? []), ...statements]);
  }

  #readResourcePolicies() {
    const references = this.#references;
    const template = references.template;
    for (const [logicalId, resource] of resourcesOfType(template, 'AWS::SQS::QueuePolicy')) {
      const properties = resource.Properties ?? {};
      const policy = statementsOf(references.resolve(properties.PolicyDocument, logicalId));
      for (const url of asList(properties.Queues)) {
        const queueId =
          referencedId(url) ?? references.logicalIdFor(references.resolveString(url, logicalId));
        const arn = queueId ? references.identity(queueId)?.attributes.Arn : undefined;
        if (arn) this.#addResourceStatements(arn, policy.Statement);
      }
    }
    for (const [logicalId, resource] of resourcesOfType(template, 'AWS::Lambda::Permission')) {
      const properties = references.resolve(resource.Properties ?? {}, logicalId) as Record<string, string>;
      const functionId = references.logicalIdFor(String(properties.FunctionName));
      const arn = functionId ? references.identity(functionId)?.attributes.Arn : undefined;
      if (!arn) continue;
      const principal = String(properties.Principal);
      const condition: Record<string, Record<string, string>> = {};
      if (properties.SourceArn) condition.ArnLike = { 'aws:SourceArn': properties.SourceArn };
      if (properties.SourceAccount)
        condition.StringEquals = { 'aws:SourceAccount': properties.SourceAccount };
      this.#addResourceStatements(arn, [
        {
          Sid: logicalId,
          Effect: 'Allow',
          Principal:
            principal === '*'
              ? '*'
              : principal.endsWith('.amazonaws.com')
                ? { Service: principal }
                : { AWS: principal },
          Action: properties.Action,
          Resource: arn,
          ...(Object.keys(condition).length > 0 ? { Condition: condition } : {}),
        },
      ]);
    }
  }
}

/** The condition keys a policy's statements test, lower-cased (`dynamodb:leadingkeys`). */
export function conditionKeysOf(policy: PolicyDocument): string[] {
  const keys = new Set<string>();
  for (const statement of policy.Statement)
    for (const operands of Object.values(statement.Condition ?? {}))
      for (const key of Object.keys(operands)) keys.add(key.toLowerCase());
  return [...keys];
}
