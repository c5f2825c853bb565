import { ExecutionAlreadyExists, type SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { ApplyFlow } from '../../core/mesh-file/ports.ts';
import { askStore } from '../../core/unavailable.ts';

/**
 * Starts the apply flow (lib/flow/apply.asl.json, a Standard workflow) for a job that outlived
 * its request. The execution is named after the job, so a start asked twice is one execution.
 */
export class StepFunctionsApplyFlow implements ApplyFlow {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;

  constructor(options: { readonly client: SFNClient; readonly stateMachineArn: string }) {
    this.#client = options.client;
    this.#stateMachineArn = options.stateMachineArn;
  }

  async started(id: string): Promise<void> {
    try {
      await askStore('the apply flow', () =>
        this.#client.send(
          new StartExecutionCommand({
            stateMachineArn: this.#stateMachineArn,
            name: `apply-${id}`,
            input: JSON.stringify({ id }),
          }),
        ),
      );
    } catch (error) {
      if (error instanceof ExecutionAlreadyExists) return;
      throw error;
    }
  }
}
