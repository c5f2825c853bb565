import { ExecutionAlreadyExists, type SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { askStore } from '../../core/unavailable.ts';

/**
 * Starts an execution of a stepping flow (lib/server/flows/stepping-flows.ts: the rollout's, the apply
 * job's) with the record's id as its input, the execution's name as the run its continuations
 * are named after (`<name>-c<generation>`), and no loop counted yet. The execution's name makes a start asked twice one
 * execution: one already there under that name is the start, not a failure. Step Functions away
 * is "try again", as the store is.
 */
export async function startSteppingExecution(
  client: SFNClient,
  flow: { readonly stateMachineArn: string; readonly what: string },
  execution: { readonly name: string; readonly id: string },
): Promise<void> {
  try {
    await askStore(flow.what, () =>
      client.send(
        new StartExecutionCommand({
          stateMachineArn: flow.stateMachineArn,
          name: execution.name,
          input: JSON.stringify({ id: execution.id, run: execution.name, generation: 0, loops: 0 }),
        }),
      ),
    );
  } catch (error) {
    if (error instanceof ExecutionAlreadyExists) return;
    throw error;
  }
}
