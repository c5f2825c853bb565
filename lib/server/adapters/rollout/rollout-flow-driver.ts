import { ExecutionStatus, paginateListExecutions, type SFNClient } from '@aws-sdk/client-sfn';
import type { RolloutDriver } from '../../core/rollout/ports.ts';
import type { RolloutRecord } from '../../core/rollout/record.ts';
import { askStore } from '../../core/unavailable.ts';
import { startSteppingExecution } from '../flows/stepping-execution.ts';

/**
 * Starts the rollout flow (lib/server/flows/rollout.asl.json, a Standard workflow) for a rollout started
 * or resumed. The execution is named after the rollout and its record's version, so the same
 * start asked twice (a redelivered upgrade, a retried request) is one execution, and a resume,
 * which writes a new version, starts a new one after the old has finished or died.
 */
export class StepFunctionsRolloutDriver implements RolloutDriver {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;

  constructor(options: { readonly client: SFNClient; readonly stateMachineArn: string }) {
    this.#client = options.client;
    this.#stateMachineArn = options.stateMachineArn;
  }

  async started(record: Pick<RolloutRecord, 'id' | 'version'>): Promise<void> {
    await startSteppingExecution(
      this.#client,
      { stateMachineArn: this.#stateMachineArn, what: 'the rollout flow' },
      { name: `${record.id}-v${record.version}`, id: record.id },
    );
  }

  /**
   * Whether an execution of the flow for this rollout is running: one started for any of its
   * versions, or a continuation of one (`<id>-v<version>-c<n>`, rollout.asl.json). One page of
   * running executions lists 1,000; running ones are the rollouts and nothing else.
   */
  async driving(id: string): Promise<boolean> {
    return askStore('the rollout flow', async () => {
      for await (const page of paginateListExecutions(
        { client: this.#client, pageSize: 1_000 },
        { stateMachineArn: this.#stateMachineArn, statusFilter: ExecutionStatus.RUNNING },
      ))
        if ((page.executions ?? []).some((execution) => execution.name?.startsWith(`${id}-v`))) return true;
      return false;
    });
  }
}
