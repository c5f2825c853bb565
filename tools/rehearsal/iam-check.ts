import { runSimulation } from '@cloud-copilot/iam-simulate';
import { displayName } from './assembly.ts';
import {
  conditionKeysOf,
  type NamedPolicy,
  type PolicyDocument,
  type TemplatePolicies,
} from './iam-policies.ts';
import { LeadingKeyKinds, leadingKeyPatterns } from './leading-keys.ts';
import type { References } from './references.ts';

/** Who makes a call: a role's session (a function, the event source, a state machine) or an AWS service. */
export type Principal =
  | {
      readonly kind: 'role';
      readonly roleLogicalId: string;
      readonly session: string;
      readonly label: string;
    }
  | {
      readonly kind: 'service';
      readonly service: string;
      readonly sourceArn: string;
      readonly label: string;
    };

export type AccessRequest = {
  readonly action: string;
  readonly resource: string;
  /** Condition keys the request carries (`dynamodb:LeadingKeys`, say); the global ones are added here. */
  readonly context?: Readonly<Record<string, string | string[]>>;
};

export type Decision = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** The condition keys the rehearsal sets on requests; a policy testing any other key cannot be judged. */
export const suppliedConditionKeys = [
  'aws:securetransport',
  'aws:requestedregion',
  'aws:principalarn',
  'aws:principalaccount',
  'aws:principaltype',
  'aws:sourcearn',
  'aws:sourceaccount',
  'dynamodb:leadingkeys',
  'dynamodb:returnvalues',
  'dynamodb:select',
  'dynamodb:enclosingoperation',
  'dynamodb:returnconsumedcapacity',
];

/**
 * Judges calls against the template's IAM policies with @cloud-copilot/iam-simulate, in one
 * fake account and region: the principal's identity policies (for a role), the resource's own
 * policy, both as AWS combines them within one account. A denial says why; a role whose
 * policies cannot be read throws the RehearsalProblem that says so.
 */
export class IamCheck {
  readonly #policies: TemplatePolicies;
  readonly #references: References;
  readonly #decisions = new Map<string, Promise<Decision>>();

  readonly #leadingKeys: LeadingKeyKinds | undefined;

  constructor(policies: TemplatePolicies, references: References) {
    this.#policies = policies;
    this.#references = references;
    const patterns = leadingKeyPatterns(policies.everyDocument().map(({ policy }) => policy));
    this.#leadingKeys = patterns ? new LeadingKeyKinds(patterns) : undefined;
  }

  /** Condition keys the template's policies test that the rehearsal does not set, each naming its policy. */
  unsupportedConditionKeys(): string[] {
    return this.#policies.everyDocument().flatMap(({ where, policy }) =>
      conditionKeysOf(policy)
        .filter((key) => !suppliedConditionKeys.includes(key))
        .map(
          (key) => `${where} tests the condition key ${key}, which the rehearsal does not set on requests`,
        ),
    );
  }

  async authorize(principal: Principal, asked: AccessRequest): Promise<Decision> {
    const request = this.#withStandInKeys(asked);
    const key = JSON.stringify([principal, request]);
    let decision = this.#decisions.get(key);
    if (!decision) {
      decision = this.#decide(principal, request);
      this.#decisions.set(key, decision);
    }
    return decision;
  }

  /**
   * Judges one request against policy documents that are not the template's but an answer's
   * (the IoT policies a custom authorizer returns for a connection), as identity policies of
   * `principalArn`.
   */
  async judge(
    documents: readonly PolicyDocument[],
    principalArn: string,
    request: AccessRequest,
  ): Promise<Decision> {
    const { account, region } = this.#references.environment;
    const result = await runSimulation(
      {
        request: {
          principal: principalArn,
          action: request.action,
          resource: { resource: request.resource, accountId: account },
          contextVariables: {
            'aws:SecureTransport': 'true',
            'aws:RequestedRegion': region,
            ...request.context,
          },
        },
        identityPolicies: documents.map((policy, index) => ({ name: `answer-${index}`, policy })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    if (result.resultType === 'error')
      return { allowed: false, reason: `the IAM simulator could not judge it (${result.errors.message})` };
    return result.overallResult === 'Allowed'
      ? { allowed: true }
      : { allowed: false, reason: `no statement of the ${documents.length} policies answered allows it` };
  }

  /** The request with its partition keys stood in for by the first of their kind (leading-keys.ts). */
  #withStandInKeys(request: AccessRequest): AccessRequest {
    const kinds = this.#leadingKeys;
    const entry = Object.entries(request.context ?? {}).find(
      ([key]) => key.toLowerCase() === 'dynamodb:leadingkeys',
    );
    if (!kinds || !entry) return request;
    const [name, keys] = entry;
    const standIns = [...new Set([keys].flat().map((key) => kinds.standIn(key)))].sort();
    return { ...request, context: { ...request.context, [name]: standIns } };
  }

  #resourcePolicyFor(resource: string): PolicyDocument | undefined {
    const unqualified = resource.replace(/^(arn:[^:]+:lambda:[^:]+:[^:]+:function:[^:]+).*$/, '$1');
    return this.#policies.resourcePolicy(unqualified);
  }

  async #decide(principal: Principal, request: AccessRequest): Promise<Decision> {
    const { account, region, partition } = this.#references.environment;
    const context: Record<string, string | string[]> = {
      'aws:SecureTransport': 'true',
      'aws:RequestedRegion': region,
      ...request.context,
    };
    let principalArn: string;
    let identityPolicies: NamedPolicy[] = [];
    if (principal.kind === 'role') {
      const roleArn = this.#references.identity(principal.roleLogicalId)?.attributes.Arn as string;
      const roleName = this.#references.identity(principal.roleLogicalId)?.ref as string;
      principalArn = `arn:${partition}:sts::${account}:assumed-role/${roleName}/${principal.session}`;
      Object.assign(context, {
        'aws:PrincipalArn': roleArn,
        'aws:PrincipalAccount': account,
        'aws:PrincipalType': 'AssumedRole',
      });
      identityPolicies = this.#policies.identityPolicies(principal.roleLogicalId);
    } else {
      principalArn = principal.service;
      Object.assign(context, { 'aws:SourceArn': principal.sourceArn, 'aws:SourceAccount': account });
    }
    const resourcePolicy =
      request.action.toLowerCase() === 'sts:assumerole'
        ? this.#policies.trustPolicy(this.#references.logicalIdFor(request.resource) ?? '')
        : this.#resourcePolicyFor(request.resource);
    const result = await runSimulation(
      {
        request: {
          principal: principalArn,
          action: request.action,
          resource: { resource: request.resource, accountId: account },
          contextVariables: context,
        },
        identityPolicies,
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        ...(resourcePolicy ? { resourcePolicy } : {}),
      },
      {},
    );
    if (result.resultType === 'error')
      return { allowed: false, reason: `the IAM simulator could not judge it (${result.errors.message})` };
    if (result.overallResult === 'Allowed') return { allowed: true };
    if (result.overallResult === 'ExplicitlyDenied')
      return {
        allowed: false,
        reason: `explicitly denied by ${resourcePolicy ? 'a policy (identity or resource)' : 'an identity policy'}`,
      };
    return {
      allowed: false,
      reason:
        principal.kind === 'role'
          ? `no statement of the policies of role ${displayName(this.#references.template, principal.roleLogicalId)}${resourcePolicy ? ' or of the resource policy' : ''} allows it`
          : `no statement of the resource policy allows ${principal.service}`,
    };
  }
}
