import { randomUUID } from 'node:crypto';
import { displayName } from './assembly.ts';
import { isCustomResource } from './custom-resource-identity.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import { cloudFormationResponsesHost } from './iot-endpoint.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';
import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import type { References } from './references.ts';

/** A Lambda-backed custom resource of the template, resolved. */
export type CustomResourceDefinition = {
  readonly logicalId: string;
  readonly displayName: string;
  readonly type: string;
  readonly provider: FunctionDefinition;
  /** As CloudFormation hands them to the provider: every scalar a string. */
  readonly properties: Record<string, unknown>;
};

/** What a provider PUT to its ResponseURL. */
type CustomResourceResponse = {
  readonly Status?: string;
  readonly Reason?: string;
  readonly PhysicalResourceId?: string;
  readonly Data?: Record<string, unknown>;
};

/** CloudFormation passes a custom resource's properties with every number and boolean as a string. */
const asCloudFormationPasses = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(asCloudFormationPasses);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, asCloudFormationPasses(item)]),
    );
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
};

/** The template's custom resources; one whose ServiceToken is not a function of the template (an SNS topic) is a problem. */
export function readCustomResources(
  references: References,
  lambda: LambdaService,
): CustomResourceDefinition[] {
  const findings: string[] = [];
  const definitions: CustomResourceDefinition[] = [];
  for (const [logicalId, resource] of Object.entries(references.template.Resources)) {
    if (!isCustomResource(resource)) continue;
    const where = `custom resource ${displayName(references.template, logicalId)} (${logicalId})`;
    try {
      const properties = references.resolve(resource.Properties ?? {}, where) as Record<string, unknown>;
      const provider = lambda.byArn(String(properties.ServiceToken));
      if (!provider) {
        findings.push(
          `${where}: its ServiceToken ${String(properties.ServiceToken)} is not a function of this template`,
        );
        continue;
      }
      definitions.push({
        logicalId,
        displayName: displayName(references.template, logicalId),
        type: resource.Type,
        provider,
        properties: asCloudFormationPasses(properties) as Record<string, unknown>,
      });
    } catch (error) {
      if (!(error instanceof RehearsalProblem)) throw error;
      findings.push(error.message);
    }
  }
  throwIfFindings('custom-resource', findings);
  return definitions;
}

/**
 * CloudFormation's side of custom resources: the Create event to the provider, its answer on
 * the ResponseURL (served by the rehearsal's HTTPS listener), and the check that the answer
 * is what the rest of the stack was resolved with.
 */
export class CustomResourceResponses {
  readonly #waiting = new Map<string, (response: CustomResourceResponse) => void>();

  /** Takes a PUT to a response URL; false when it names no request waiting for one. */
  receive(path: string, body: string): boolean {
    const requestId = /^\/cloudformation-response\/([\w-]+)/.exec(path)?.[1];
    const resolve = requestId ? this.#waiting.get(requestId) : undefined;
    if (!requestId || !resolve) return false;
    this.#waiting.delete(requestId);
    try {
      resolve(JSON.parse(body) as CustomResourceResponse);
    } catch {
      resolve({ Status: 'FAILED', Reason: 'the response body is not JSON' });
    }
    return true;
  }

  /**
   * Creates every custom resource as CloudFormation does: the provider invoked with a Create
   * event, its response awaited on the ResponseURL. A FAILED answer, no answer, or an answer
   * other than the attributes and physical id the stack was resolved with is a problem.
   */
  async createAll(
    definitions: readonly CustomResourceDefinition[],
    deps: {
      readonly lambda: LambdaService;
      readonly references: References;
      readonly ledger: RehearsalLedger;
    },
  ): Promise<void> {
    const { stackName, region, account, partition } = deps.references.environment;
    for (const definition of definitions) {
      const where = `custom resource ${definition.displayName}`;
      const requestId = randomUUID();
      const answered = new Promise<CustomResourceResponse>((resolve) =>
        this.#waiting.set(requestId, resolve),
      );
      const event = {
        RequestType: 'Create',
        ServiceToken: definition.properties.ServiceToken,
        ResponseURL: `https://${cloudFormationResponsesHost}/cloudformation-response/${requestId}`,
        StackId: `arn:${partition}:cloudformation:${region}:${account}:stack/${stackName}/00000000-0000-0000-0000-000000000000`,
        RequestId: requestId,
        LogicalResourceId: definition.logicalId,
        ResourceType: definition.type,
        ResourceProperties: definition.properties,
      };
      let response: CustomResourceResponse | undefined;
      try {
        await deps.lambda.invoke(definition.provider, event);
        response = await Promise.race([
          answered,
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 1_000)),
        ]);
      } catch (error) {
        if (!(error instanceof LambdaInvocationError)) throw error;
        deps.ledger.problem(
          new RehearsalProblem('custom-resource', `${where}: its provider failed: ${error.message}`),
        );
        continue;
      } finally {
        this.#waiting.delete(requestId);
      }
      for (const finding of answerFindings(response, deps.references.identity(definition.logicalId)))
        deps.ledger.problem(new RehearsalProblem('custom-resource', `${where}: ${finding}`));
    }
  }
}

function answerFindings(
  response: CustomResourceResponse | undefined,
  expected: { ref: string; attributes: Readonly<Record<string, string>> } | undefined,
): string[] {
  if (!response)
    return ['its provider answered nothing on the ResponseURL: CloudFormation would wait an hour, then fail'];
  if (response.Status !== 'SUCCESS')
    return [
      `its provider answered ${response.Status ?? 'no status'} (${response.Reason ?? 'no reason'}): the deploy would roll back`,
    ];
  const findings: string[] = [];
  if (expected && response.PhysicalResourceId !== expected.ref)
    findings.push(
      `its physical id is ${response.PhysicalResourceId}, but the stack was resolved with ${expected.ref}`,
    );
  for (const [attribute, value] of Object.entries(expected?.attributes ?? {}))
    if (response.Data?.[attribute] !== value)
      findings.push(
        `its ${attribute} is ${JSON.stringify(response.Data?.[attribute])}, but the stack was resolved with ${JSON.stringify(value)}`,
      );
  return findings;
}
