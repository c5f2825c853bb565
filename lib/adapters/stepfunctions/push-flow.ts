import { SFNClient, StartSyncExecutionCommand } from '@aws-sdk/client-sfn';
import type { MeshConfig } from '../../config.ts';
import { outcomeOf } from '../../core/mesh/push-steps.ts';
import type { PushFlow, PushOutcome, PushRequest } from '../../core/ports.ts';
import { makeDynamoDBClient } from '../aws-clients.ts';
import { DynamoDBMeshStore } from '../dynamodb/mesh-store.ts';
import { LocalPushFlow, PushFlowFailedError } from './local-push-flow.ts';
import { pushTaskFunctions } from './push-steps-runner.ts';

export { LocalPushFlow, PushFlowFailedError } from './local-push-flow.ts';

/** Push on the deployed Step Functions Express state machine, waiting for its answer. */
export class StepFunctionsPushFlow implements PushFlow {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;

  constructor(options: { readonly client: SFNClient; readonly stateMachineArn: string }) {
    this.#client = options.client;
    this.#stateMachineArn = options.stateMachineArn;
  }

  async push(request: PushRequest): Promise<PushOutcome> {
    const answer = await this.#client.send(
      new StartSyncExecutionCommand({
        stateMachineArn: this.#stateMachineArn,
        input: JSON.stringify(request),
      }),
    );
    if (answer.status !== 'SUCCEEDED') {
      throw new PushFlowFailedError(
        answer.error ?? answer.status ?? 'FAILED',
        `the push flow ended ${answer.status}: ${answer.error ?? ''} ${answer.cause ?? ''}`.trim(),
      );
    }
    return outcomeOf(JSON.parse(answer.output ?? 'null'));
  }
}

/** Step Functions when the stack gave us a state machine; otherwise the same ASL in-process. */
export function makePushFlow(config: MeshConfig): PushFlow {
  if (config.pushFlowArn) {
    return new StepFunctionsPushFlow({
      client: new SFNClient({ region: config.region }),
      stateMachineArn: config.pushFlowArn,
    });
  }
  const store = new DynamoDBMeshStore({
    client: makeDynamoDBClient(config),
    tableName: config.inventoryTable,
  });
  return new LocalPushFlow({ tasks: pushTaskFunctions(store) });
}
