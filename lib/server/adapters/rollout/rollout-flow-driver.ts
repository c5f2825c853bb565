import type { SFNClient } from '@aws-sdk/client-sfn';
import type { RolloutDriver } from '../../core/rollout/ports.ts';
import type { RolloutRecord } from '../../core/rollout/record.ts';
import { startSteppingExecution } from '../flows/stepping-execution.ts';

/**
 * Starts the rollout flow (lib/server/flows/rollout.asl.json, a Standard workflow) for a rollout started
 * or resumed. The execution is named after the rollout and its record's version, so the same
 * start asked twice (a redelivered upgrade, a retried request) is one execution, and a resume,
 * which writes a new version, starts a new one after the old has finished.
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
}
