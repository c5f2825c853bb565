import type { SFNClient } from '@aws-sdk/client-sfn';
import type { ApplyFlow } from '../../core/mesh-file/ports.ts';
import { startSteppingExecution } from '../flows/stepping-execution.ts';

/**
 * Starts the apply flow (lib/server/flows/apply.asl.json, a Standard workflow) for a job that outlived
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
    await startSteppingExecution(
      this.#client,
      { stateMachineArn: this.#stateMachineArn, what: 'the apply flow' },
      { name: `apply-${id}`, id },
    );
  }
}
