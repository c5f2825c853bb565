import { displayName, resourcesOfType } from './assembly.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import type { LambdaService } from './lambda-service.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import type { References } from './references.ts';

/** An IoT custom authorizer of the template, resolved. */
export type IotAuthorizerModel = {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly fn: FunctionDefinition;
  readonly active: boolean;
};

/** A topic rule of the template, resolved: the topic filter its SQL reads and the functions it invokes. */
export type TopicRuleModel = {
  readonly logicalId: string;
  readonly displayName: string;
  readonly name: string;
  readonly arn: string;
  readonly topicFilter: string;
  readonly enabled: boolean;
  readonly functions: readonly FunctionDefinition[];
  /** Where IoT writes the rule's failures, with the role it assumes to write them. */
  readonly errorLog: { readonly logGroupName: string; readonly roleLogicalId: string } | undefined;
};

export type IotModel = {
  readonly authorizers: readonly IotAuthorizerModel[];
  readonly rules: readonly TopicRuleModel[];
};

/** The one SQL form the rehearsal runs: every message of a topic filter, whole. */
const selectAll = /^\s*SELECT\s+\*\s+FROM\s+'([^']+)'\s*$/i;

const asObject = (value: unknown) => (value ?? {}) as Record<string, unknown>;

/**
 * The template's IoT custom authorizers and topic rules, each checked as IoT checks it when it
 * is created; what the rehearsal cannot run (a signed authorizer, SQL beyond
 * `SELECT * FROM '<topic filter>'`, an action other than Lambda) is a problem, reported together.
 */
export function readIotModel(references: References, lambda: LambdaService): IotModel {
  const findings: string[] = [];
  const template = references.template;
  const functionOf = (arn: unknown, where: string): FunctionDefinition | undefined => {
    const fn = lambda.byArn(String(arn));
    if (!fn) findings.push(`${where}: ${String(arn)} is not a function of this template`);
    return fn;
  };
  const attempt = (read: () => void) => {
    try {
      read();
    } catch (error) {
      if (!(error instanceof RehearsalProblem)) throw error;
      findings.push(error.message);
    }
  };

  const authorizers: IotAuthorizerModel[] = [];
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::IoT::Authorizer')) {
    const where = `IoT authorizer ${displayName(template, logicalId)} (${logicalId})`;
    attempt(() => {
      const properties = asObject(references.resolve(resource.Properties, where));
      const fn = functionOf(properties.AuthorizerFunctionArn, `${where} AuthorizerFunctionArn`);
      if (String(properties.SigningDisabled) !== 'true')
        findings.push(
          `${where}: a signed authorizer (token signature) is not rehearsed; the rehearsal runs unsigned ones`,
        );
      const identity = references.identity(logicalId);
      if (fn && identity)
        authorizers.push({
          logicalId,
          name: identity.ref,
          arn: identity.attributes.Arn as string,
          fn,
          active: String(properties.Status ?? 'INACTIVE') === 'ACTIVE',
        });
    });
  }

  const rules: TopicRuleModel[] = [];
  for (const [logicalId, resource] of resourcesOfType(template, 'AWS::IoT::TopicRule')) {
    const where = `IoT topic rule ${displayName(template, logicalId)} (${logicalId})`;
    attempt(() => {
      const payload = asObject(asObject(references.resolve(resource.Properties, where)).TopicRulePayload);
      const topicFilter = selectAll.exec(String(payload.Sql ?? ''))?.[1];
      if (!topicFilter)
        findings.push(
          `${where}: its SQL ${JSON.stringify(payload.Sql)} is not one the rehearsal runs (SELECT * FROM '<topic filter>')`,
        );
      const functions: FunctionDefinition[] = [];
      for (const action of (payload.Actions ?? []) as Array<Record<string, unknown>>) {
        const kinds = Object.keys(action);
        if (kinds.length !== 1 || kinds[0] !== 'Lambda') {
          findings.push(
            `${where}: its ${kinds.join(', ')} action is not rehearsed; the rehearsal runs Lambda actions`,
          );
          continue;
        }
        const fn = functionOf(asObject(action.Lambda).FunctionArn, `${where} Lambda action`);
        if (fn) functions.push(fn);
      }
      const errorAction = asObject(payload.ErrorAction);
      const logs = errorAction.CloudwatchLogs ? asObject(errorAction.CloudwatchLogs) : undefined;
      if (Object.keys(errorAction).length > 0 && !logs)
        findings.push(`${where}: its error action ${Object.keys(errorAction).join(', ')} is not rehearsed`);
      const roleLogicalId = logs ? references.logicalIdFor(String(logs.RoleArn)) : undefined;
      if (logs && !roleLogicalId)
        findings.push(`${where}: its error action's role is not a role of this template`);
      const identity = references.identity(logicalId);
      if (topicFilter && identity)
        rules.push({
          logicalId,
          displayName: displayName(template, logicalId),
          name: identity.ref,
          arn: identity.attributes.Arn as string,
          topicFilter,
          enabled: String(payload.RuleDisabled ?? 'false') !== 'true',
          functions,
          errorLog:
            logs && roleLogicalId ? { logGroupName: String(logs.LogGroupName), roleLogicalId } : undefined,
        });
    });
  }
  throwIfFindings('iot', findings);
  return { authorizers, rules };
}

/** MQTT's topic filter match: `+` is one level, a trailing `#` any number (none included). */
export function topicMatches(filter: string, topic: string): boolean {
  const filterLevels = filter.split('/');
  const topicLevels = topic.split('/');
  for (let index = 0; index < filterLevels.length; index += 1) {
    const level = filterLevels[index];
    if (level === '#') return index === filterLevels.length - 1;
    if (index >= topicLevels.length) return false;
    if (level !== '+' && level !== topicLevels[index]) return false;
  }
  return filterLevels.length === topicLevels.length;
}
