import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type RunningEventSource, startEventSource } from '../../lib/runtime/event-source.ts';
import { displayName, resourcesOfType } from './assembly.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import type { IamCheck } from './iam-check.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';
import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import { type References, referencedId } from './references.ts';

/** An SQS event source mapping of the template, resolved. */
export type QueueMapping = {
  readonly logicalId: string;
  readonly fn: FunctionDefinition;
  readonly queueArn: string;
  readonly queueUrl: string;
  readonly batchSize: number;
  readonly reportBatchItemFailures: boolean;
  readonly maximumConcurrency: number;
  readonly enabled: boolean;
};

/** The mappings of the template, each checked as Lambda checks one when it is created. */
export function readQueueMappings(references: References, lambda: LambdaService): QueueMapping[] {
  const findings: string[] = [];
  const mappings: QueueMapping[] = [];
  for (const [logicalId, resource] of resourcesOfType(
    references.template,
    'AWS::Lambda::EventSourceMapping',
  )) {
    const where = `event source mapping ${displayName(references.template, logicalId)} (${logicalId})`;
    const properties = references.resolve(resource.Properties ?? {}, where) as Record<string, unknown>;
    const queueArn = String(properties.EventSourceArn ?? '');
    const queueId = references.logicalIdFor(queueArn);
    const queue = queueId ? references.template.Resources[queueId] : undefined;
    if (queue?.Type !== 'AWS::SQS::Queue') {
      findings.push(
        `${where}: its source ${queueArn || '(none)'} is not a queue of this template; the rehearsal runs SQS sources only`,
      );
      continue;
    }
    const fnId =
      referencedId(resource.Properties?.FunctionName) ??
      references.logicalIdFor(String(properties.FunctionName));
    const fn = fnId ? lambda.byLogicalId(fnId) : undefined;
    if (!fn) {
      findings.push(
        `${where}: its function ${String(properties.FunctionName)} is not a function of this template`,
      );
      continue;
    }
    const queueProperties = references.resolve(queue.Properties ?? {}, queueId as string) as Record<
      string,
      unknown
    >;
    const fifo = String(queueProperties.FifoQueue) === 'true';
    const batchSize = Number(properties.BatchSize ?? 10);
    const visibility = Number(queueProperties.VisibilityTimeout ?? 30);
    if (visibility < fn.timeoutSeconds)
      findings.push(
        `${where}: the queue's visibility timeout ${visibility} s is less than ${fn.displayName}'s timeout ${fn.timeoutSeconds} s; Lambda refuses the mapping`,
      );
    if (fifo && batchSize > 10)
      findings.push(`${where}: batch size ${batchSize} is over 10, the most a FIFO queue allows`);
    if (fifo && properties.MaximumBatchingWindowInSeconds !== undefined)
      findings.push(`${where}: a FIFO queue's mapping takes no MaximumBatchingWindowInSeconds`);
    const concurrency = (properties.ScalingConfig as { MaximumConcurrency?: number } | undefined)
      ?.MaximumConcurrency;
    mappings.push({
      logicalId,
      fn,
      queueArn,
      queueUrl: references.identity(queueId as string)?.ref as string,
      batchSize,
      reportBatchItemFailures: ((properties.FunctionResponseTypes as string[] | undefined) ?? []).includes(
        'ReportBatchItemFailures',
      ),
      // Lambda's own default is far higher; the rehearsal keeps a machine's worth
      maximumConcurrency: Number(concurrency ?? 5),
      enabled: properties.Enabled !== false && properties.Enabled !== 'false',
    });
  }
  throwIfFindings('event-source', findings);
  return mappings;
}

export type EventSourceDeps = {
  readonly lambda: LambdaService;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  readonly region: string;
  /** The rehearsal's AWS endpoint by address: the poller's calls are checked there, as its function's role. */
  readonly awsEndpointUrl: string;
  /** What the poller met: a batch whose function failed (it stays on the queue), a receive that failed. */
  readonly onError: (error: Error) => void;
};

/**
 * Runs one mapping the way Lambda's SQS poller does: with the function's role (checked for
 * ReceiveMessage, DeleteMessage and GetQueueAttributes when the mapping is made, as Lambda does),
 * batches of BatchSize, MaximumConcurrency pollers, and the batch response honoured only with
 * ReportBatchItemFailures (without it a batch that returns is deleted whole).
 */
export async function startQueueMapping(
  mapping: QueueMapping,
  deps: EventSourceDeps,
): Promise<RunningEventSource> {
  const principal = deps.lambda.principal(mapping.fn);
  for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
    const decision = await deps.iam.authorize(principal, { action, resource: mapping.queueArn });
    if (!decision.allowed)
      deps.ledger.problem(
        new RehearsalProblem(
          'event-source',
          `Lambda would refuse to create the mapping of ${mapping.fn.displayName}: its role may not ${action} on ${mapping.queueArn}`,
        ),
      );
  }
  const credentials = deps.lambda.credentials(mapping.fn);
  const sqs = new SQSClient({
    region: deps.region,
    endpoint: deps.awsEndpointUrl,
    credentials,
    useQueueUrlAsEndpoint: false,
  });
  const running = startEventSource({
    queueUrl: mapping.queueUrl,
    sqs,
    functionName: mapping.fn.functionName,
    batchSize: mapping.batchSize,
    pollers: mapping.maximumConcurrency,
    waitTimeSeconds: 1,
    onError: deps.onError,
    handler: async (event: SQSEvent) => {
      for (const record of event.Records)
        Object.assign(record, { eventSourceARN: mapping.queueArn, awsRegion: deps.region });
      let response: SQSBatchResponse | undefined;
      try {
        response = (await deps.lambda.invoke(mapping.fn, event)) as SQSBatchResponse | undefined;
      } catch (error) {
        if (error instanceof LambdaInvocationError)
          throw new Error(`${mapping.fn.displayName} failed: ${error.message}`);
        throw error;
      }
      return mapping.reportBatchItemFailures ? response : undefined;
    },
  });
  return {
    async stop() {
      await running.stop();
      sqs.destroy();
    },
  };
}
