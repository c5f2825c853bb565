import { readFileSync } from 'node:fs';
import { pushFailures } from '../core/mesh/errors.ts';
import { pushInExecutions } from '../core/push/executions.ts';
import type { PushOutcome, PushRequest } from '../core/push/ports.ts';
import type { PushTaskFunctions } from '../core/push/steps.ts';
import pushDefinition from './push.asl.json' with { type: 'json' };
import { runDefinition } from './run-definition.ts';

/** The push flow's one definition, read by the local runner and by the CDK alike. */
export const pushDefinitionPath = new URL('./push.asl.json', import.meta.url);

export function readPushDefinition(): string {
  return readFileSync(pushDefinitionPath, 'utf8');
}

/** Task state name → the handler file in functions/ its Resource substitution names. */
export const pushTasks = {
  Begin: 'push-begin',
  FindBehind: 'push-find-behind',
  Send: 'push-send',
} as const;

/**
 * The failures every Task's Retry waits out, from their rows (lib/server/core/mesh/errors.ts): Lambda's
 * own "not now" faults, and our store being away (a Task's error name is its error's `name`,
 * locally and on Lambda alike). The ASL's Retry lists must name exactly these; when the
 * retries run out, the push is answered "try again".
 */
export const retriedByFlow: readonly string[] = [...pushFailures.rows]
  .filter(([, row]) => row.retriedByFlow)
  .map(([name]) => name);

/** `${PushSendFunctionArn}` for `push-send`: the substitution the CDK fills with the function's ARN. */
export const substitutionFor = (handler: string) =>
  `${handler
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')}FunctionArn`;

/**
 * Fills the `${…FunctionArn}` substitutions the way Step Functions' definitionSubstitutions
 * does. Locally each Task is overridden by state name, so the ARNs only have to be well formed.
 */
export function substitutePushDefinition(definition: string, arnFor: (handler: string) => string): string {
  let filled = definition;
  for (const handler of Object.values(pushTasks)) {
    filled = filled.replaceAll(`\${${substitutionFor(handler)}}`, arnFor(handler));
  }
  return filled;
}

export const localFunctionArn = (handler: string) =>
  `arn:aws:lambda:us-east-1:000000000000:function:${handler}`;

/**
 * The push's steps run in-process in the order push.asl.json gives them (Begin, then FindBehind
 * and a Map of Send until done, in executions chained as on AWS): what a plan runs on its store
 * that writes nowhere, its lists kept in the tasks' work (in memory for a plan). The definition
 * is bundled with the function, so it is the file the CDK deploys.
 */
export async function runPushDefinition(
  tasks: PushTaskFunctions,
  request: PushRequest,
  options: { readonly retryIntervalMs?: number } = {},
): Promise<PushOutcome> {
  const { Begin, FindBehind, Send } = tasks;
  return pushInExecutions(request, tasks.work, (input) =>
    runDefinition(pushDefinition, { Begin, FindBehind, Send }, input, options),
  );
}
