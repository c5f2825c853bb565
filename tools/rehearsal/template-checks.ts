import { readFileSync } from 'node:fs';
import { pushTasks, readPushDefinition, substitutionFor } from '../../lib/server/flows/push-definition.ts';
import { steppingFlows } from '../../lib/server/flows/stepping-flows.ts';
import { type FunctionSpec, functionSpecs, routesOf } from '../../lib/server/functions/table.ts';
import { consumerTimeoutSeconds, controlQueue } from '../../lib/server/setup/resources.ts';
import { type CfnResource, displayName, resourcesOfType } from './assembly.ts';
import type { AccessRequest, Principal } from './iam-check.ts';
import { referencedId } from './references.ts';
import type { JudgedStack } from './stack.ts';
import { checkSteppingFlow } from './stepping-flow-checks.ts';
import { checkStreamSource, readsAStream } from './stream-checks.ts';

/**
 * What the synthesized template must agree with, read from the template itself: the function
 * table's routes, authorizations and validators; the authorizers and who may invoke them; the
 * state machines, each of which must be its ASL file with its substitutions; the event source mapping
 * and queue settings the consumer relies on. Answers one finding per disagreement, naming the
 * function, the resource and what differs.
 */
export async function checkTemplate(
  stack: JudgedStack,
  specs: readonly FunctionSpec[] = functionSpecs,
): Promise<string[]> {
  return [
    ...stack.iam.unsupportedConditionKeys(),
    ...(await checkRoles(stack)),
    ...(await checkRoutes(stack, specs)),
    ...(await checkAuthorizers(stack, specs)),
    ...(await checkPushFlow(stack)),
    ...(await checkSteppingFlow(stack, specs, roleMay, steppingFlows.rollout)),
    ...(await checkSteppingFlow(stack, specs, roleMay, steppingFlows.apply)),
    ...(await checkEventSource(stack, specs)),
    ...(await checkStreamSource(stack, specs, roleMay)),
  ];
}

const props = (resource: CfnResource | undefined) => resource?.Properties ?? {};
const gotFunction = (value: unknown) => /"Fn::GetAtt":\["(\w+)","Arn"\]/.exec(JSON.stringify(value))?.[1];

/** The row name of a function of the template, by its logical id. */
const rowOf = (stack: JudgedStack, logicalId: string | undefined) =>
  [...stack.functions.values()].find((fn) => fn.logicalId === logicalId)?.name;
const rowOfTrigger = (specs: readonly FunctionSpec[], trigger: FunctionSpec['trigger']) =>
  specs.find((spec) => spec.trigger === trigger)?.name;

/** Whether a service (API Gateway, IoT) may invoke a function for a source ARN, by the function's resource policy. */
async function mayInvoke(stack: JudgedStack, service: string, sourceArn: string, row: string | undefined) {
  const fn = row ? stack.functions.get(row) : undefined;
  if (!fn) return `no function of row ${row}`;
  const principal: Principal = { kind: 'service', service, sourceArn, label: service };
  const decision = await stack.iam.authorize(principal, {
    action: 'lambda:InvokeFunction',
    resource: fn.arn,
  });
  return decision.allowed
    ? undefined
    : `${service} may not invoke ${fn.displayName} for ${sourceArn}: ${decision.reason}`;
}

export async function roleMay(
  stack: JudgedStack,
  roleLogicalId: string,
  label: string,
  request: AccessRequest,
) {
  const principal: Principal = { kind: 'role', roleLogicalId, session: 'rehearsal', label };
  const decision = await stack.iam.authorize(principal, request);
  return decision.allowed
    ? undefined
    : `denied: ${label} called ${request.action} on ${request.resource}: ${decision.reason}`;
}

/** Lambda may assume every function's role; a trust policy that refuses it fails the deploy. */
async function checkRoles(stack: JudgedStack): Promise<string[]> {
  const findings: string[] = [];
  for (const fn of stack.functions.values()) {
    const role = stack.references.identity(fn.roleLogicalId)?.attributes.Arn as string;
    const principal: Principal = {
      kind: 'service',
      service: 'lambda.amazonaws.com',
      sourceArn: fn.arn,
      label: 'lambda',
    };
    const decision = await stack.iam.authorize(principal, { action: 'sts:AssumeRole', resource: role });
    if (!decision.allowed)
      findings.push(`${fn.displayName}: Lambda may not assume its role: ${decision.reason}`);
  }
  return findings;
}

async function checkRoutes(stack: JudgedStack, specs: readonly FunctionSpec[]): Promise<string[]> {
  const template = stack.assembly.template;
  const findings: string[] = [];
  const pathOf = (resourceId: string | undefined): string => {
    const resource = resourceId ? template.Resources[resourceId] : undefined;
    if (resource?.Type !== 'AWS::ApiGateway::Resource') return '';
    return `${pathOf(referencedId(props(resource).ParentId))}/${props(resource).PathPart}`;
  };
  const methods = new Map(
    resourcesOfType(template, 'AWS::ApiGateway::Method')
      .filter(([, method]) => props(method).HttpMethod !== 'OPTIONS')
      .map(([id, method]) => [
        `${props(method).HttpMethod} ${pathOf(referencedId(props(method).ResourceId)) || '/'}`,
        { id, properties: props(method) },
      ]),
  );
  const [apiId] = resourcesOfType(template, 'AWS::ApiGateway::RestApi')[0] ?? [];
  const [stageId] = resourcesOfType(template, 'AWS::ApiGateway::Stage')[0] ?? [];
  const { region, account, partition } = stack.references.environment;
  const authorizationOf = { operator: 'AWS_IAM', host: 'CUSTOM', token: 'NONE', none: 'NONE' } as const;
  const hostAuthorizer = resourcesOfType(template, 'AWS::ApiGateway::Authorizer')[0]?.[0];
  for (const route of routesOf(specs)) {
    const where = `${route.method} ${route.path} (${route.handler})`;
    const method = methods.get(`${route.method} ${route.path}`);
    methods.delete(`${route.method} ${route.path}`);
    if (!method) {
      findings.push(`${where}: the template has no such method`);
      continue;
    }
    const p = method.properties;
    const served = rowOf(stack, gotFunction((p.Integration as { Uri?: unknown } | undefined)?.Uri));
    if (served !== route.handler)
      findings.push(`${where}: the method invokes ${served ?? 'no function of the table'}`);
    if ((p.Integration as { Type?: string } | undefined)?.Type !== 'AWS_PROXY')
      findings.push(`${where}: the integration is not a Lambda proxy`);
    if (p.AuthorizationType !== authorizationOf[route.auth])
      findings.push(
        `${where}: authorization ${p.AuthorizationType}, where a ${route.auth} route needs ${authorizationOf[route.auth]}`,
      );
    if (route.auth === 'host' && referencedId(p.AuthorizerId) !== hostAuthorizer)
      findings.push(`${where}: a host route without the host authorizer`);
    const validator = template.Resources[referencedId(p.RequestValidatorId) ?? ''];
    if (
      !(props(validator).ValidateRequestParameters === true && props(validator).ValidateRequestBody === true)
    )
      findings.push(`${where}: no validator of its parameters and body`);
    const required = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => `method.request.path.${match[1]}`);
    const parameters = (p.RequestParameters ?? {}) as Record<string, unknown>;
    for (const name of required)
      if (parameters[name] !== true) findings.push(`${where}: ${name} is not required`);
    if (apiId && stageId) {
      const api = stack.references.identity(apiId)?.ref;
      const stage = stack.references.identity(stageId)?.ref;
      const sourceArn = `arn:${partition}:execute-api:${region}:${account}:${api}/${stage}/${route.method}${route.path.replace(/\{(\w+)\}/g, '$1')}`;
      const refused = await mayInvoke(stack, 'apigateway.amazonaws.com', sourceArn, route.handler);
      if (refused) findings.push(`${where}: ${refused}`);
    }
  }
  for (const [method] of methods)
    findings.push(`${method}: a method of the template no row of lib/server/functions/table.ts serves`);
  return findings;
}

async function checkAuthorizers(stack: JudgedStack, specs: readonly FunctionSpec[]): Promise<string[]> {
  const template = stack.assembly.template;
  const findings: string[] = [];
  const { region, account, partition } = stack.references.environment;
  const [apiId] = resourcesOfType(template, 'AWS::ApiGateway::RestApi')[0] ?? [];
  for (const [id, authorizer] of resourcesOfType(template, 'AWS::ApiGateway::Authorizer')) {
    const p = props(authorizer);
    const row = rowOf(stack, gotFunction(p.AuthorizerUri));
    if (row !== rowOfTrigger(specs, 'authorizer'))
      findings.push(`${displayName(template, id)}: runs ${row}, not the table's host authorizer`);
    if (p.Type !== 'REQUEST' || !String(p.IdentitySource).includes('method.request.header.Authorization'))
      findings.push(`${displayName(template, id)}: not a REQUEST authorizer on the Authorization header`);
    const api = apiId ? stack.references.identity(apiId)?.ref : undefined;
    const sourceArn = `arn:${partition}:execute-api:${region}:${account}:${api}/authorizers/${stack.references.identity(id)?.ref}`;
    const refused = await mayInvoke(stack, 'apigateway.amazonaws.com', sourceArn, row);
    if (refused) findings.push(`${displayName(template, id)}: ${refused}`);
  }
  for (const [id, authorizer] of resourcesOfType(template, 'AWS::IoT::Authorizer')) {
    const p = props(authorizer);
    const row = rowOf(stack, gotFunction(p.AuthorizerFunctionArn));
    if (row !== rowOfTrigger(specs, 'broker-authorizer'))
      findings.push(`${displayName(template, id)}: runs ${row}, not the table's broker authorizer`);
    if (p.Status !== 'ACTIVE') findings.push(`${displayName(template, id)}: not ACTIVE`);
    const sourceArn = stack.references.identity(id)?.attributes.Arn as string;
    const refused = await mayInvoke(stack, 'iot.amazonaws.com', sourceArn, row);
    if (refused) findings.push(`${displayName(template, id)}: ${refused}`);
  }
  for (const [id, rule] of resourcesOfType(template, 'AWS::IoT::TopicRule')) {
    const row = rowOf(stack, gotFunction(props(rule).TopicRulePayload));
    if (row !== rowOfTrigger(specs, 'broker-lifecycle'))
      findings.push(`${displayName(template, id)}: sends to ${row}, not the table's lifecycle function`);
    const sourceArn = stack.references.identity(id)?.attributes.Arn as string;
    const refused = await mayInvoke(stack, 'iot.amazonaws.com', sourceArn, row);
    if (refused) findings.push(`${displayName(template, id)}: ${refused}`);
  }
  return findings;
}

async function checkPushFlow(stack: JudgedStack): Promise<string[]> {
  const template = stack.assembly.template;
  // the stepping flows (lib/deploy/stepping-flow.ts) are the other state machines
  const stepping = Object.values(steppingFlows).map((flow) => `${flow.id}/`);
  const machines = resourcesOfType(template, 'AWS::StepFunctions::StateMachine').filter(
    ([id]) => !stepping.some((prefix) => displayName(template, id).startsWith(prefix)),
  );
  if (machines.length !== 1)
    return [
      `the template has ${machines.length} state machines besides the stepping flows, where the push flow is one`,
    ];
  const [id, machine] = machines[0] as [string, CfnResource];
  const where = displayName(template, id);
  const p = props(machine);
  const findings: string[] = [];
  if (p.StateMachineType !== 'EXPRESS')
    findings.push(`${where}: ${p.StateMachineType}, where StartSyncExecution needs EXPRESS`);
  const key = (p.DefinitionS3Location as { Key?: string } | undefined)?.Key;
  const file = key ? stack.assembly.assetFile(key) : undefined;
  const deployed = file ? readFileSync(file, 'utf8') : JSON.stringify(p.Definition ?? p.DefinitionString);
  if (deployed !== readPushDefinition())
    findings.push(`${where}: its definition is not lib/server/flows/push.asl.json`);
  const substitutions = (p.DefinitionSubstitutions ?? {}) as Record<string, unknown>;
  const expected = Object.values(pushTasks).map((row) => [substitutionFor(row), row] as const);
  for (const [placeholder, row] of expected) {
    const named = rowOf(stack, gotFunction(substitutions[placeholder]));
    if (named !== row) findings.push(`${where}: \${${placeholder}} is ${named ?? 'no function'}, not ${row}`);
  }
  for (const placeholder of Object.keys(substitutions))
    if (!expected.some(([name]) => name === placeholder))
      findings.push(`${where}: \${${placeholder}} fills no task`);
  const role = gotFunction(p.RoleArn);
  for (const row of Object.values(pushTasks)) {
    const fn = stack.functions.get(row);
    if (!role || !fn) continue;
    const denied = await roleMay(stack, role, where, { action: 'lambda:InvokeFunction', resource: fn.arn });
    if (denied) findings.push(denied);
  }
  return findings;
}

async function checkEventSource(stack: JudgedStack, specs: readonly FunctionSpec[]): Promise<string[]> {
  const template = stack.assembly.template;
  // the stream's mapping is checked by checkStreamSource
  const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping').filter(
    ([, mapping]) => !readsAStream(mapping),
  );
  if (mappings.length !== 1)
    return [`the template has ${mappings.length} queue event source mappings, where the consumer has one`];
  const [id, mapping] = mappings[0] as [string, CfnResource];
  const where = displayName(template, id);
  const p = props(mapping);
  const findings: string[] = [];
  const row = rowOfTrigger(specs, 'queue');
  const consumer = row ? stack.functions.get(row) : undefined;
  if (!consumer || referencedId(p.FunctionName) !== consumer.logicalId)
    findings.push(`${where}: does not feed the table's queue function ${row}`);
  const queueId = gotFunction(p.EventSourceArn);
  const queue = queueId ? template.Resources[queueId] : undefined;
  if (!queueId || displayName(template, queueId) !== 'ControlQueue/Control')
    findings.push(`${where}: reads ${queueId ?? 'nothing'}, not the control queue`);
  // what the consumer and the local event source (lib/local/event-source.ts) rely on
  if (p.BatchSize !== 10)
    findings.push(`${where}: BatchSize ${p.BatchSize}, where the consumer takes batches of 10`);
  if (!((p.FunctionResponseTypes ?? []) as string[]).includes('ReportBatchItemFailures'))
    findings.push(
      `${where}: without ReportBatchItemFailures a held or failed message would be deleted with its batch`,
    );
  const concurrency = (p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency;
  if (!concurrency || concurrency < 2) findings.push(`${where}: no MaximumConcurrency of 2 or more`);
  if (Number(p.MaximumBatchingWindowInSeconds ?? 0) > 0)
    findings.push(`${where}: a batching window, which Lambda refuses on FIFO`);
  const timeout = Number(props(template.Resources[consumer?.logicalId ?? '']).Timeout ?? 3);
  const visibility = Number(props(queue).VisibilityTimeout ?? 30);
  if (timeout !== consumerTimeoutSeconds)
    findings.push(
      `${consumer?.displayName}: Timeout ${timeout} s, where lib/server/setup/resources.ts says ${consumerTimeoutSeconds} s`,
    );
  if (visibility !== controlQueue.visibilityTimeoutSeconds || visibility < timeout)
    findings.push(
      `ControlQueue/Control: VisibilityTimeout ${visibility} s, where the consumer (timeout ${timeout} s) needs ${controlQueue.visibilityTimeoutSeconds} s`,
    );
  const redrive = props(queue).RedrivePolicy as { maxReceiveCount?: number } | undefined;
  if (redrive?.maxReceiveCount !== controlQueue.deadLetter?.maxReceiveCount)
    findings.push(
      `ControlQueue/Control: maxReceiveCount ${redrive?.maxReceiveCount}, not ${controlQueue.deadLetter?.maxReceiveCount}`,
    );
  const queueArn = queueId ? stack.references.identity(queueId)?.attributes.Arn : undefined;
  if (consumer && queueArn)
    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
      const denied = await roleMay(
        stack,
        consumer.roleLogicalId,
        `${consumer.displayName} (its event source mapping)`,
        {
          action,
          resource: queueArn,
        },
      );
      if (denied) findings.push(denied);
    }
  return findings;
}
