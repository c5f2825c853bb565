import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { PushFlowUnavailableError } from '../../core/mesh/errors.ts';
import type { PushJob, PushStarter } from '../../core/mesh/push-runs.ts';

/**
 * Starts a push in the `push-run` function with an asynchronous invocation (InvocationType
 * Event): Lambda queues it and answers at once. Lambda retries a failed invocation; push-run
 * never fails one (lib/core/mesh/push-runs.ts), so a push runs once.
 */
export class LambdaPushStarter implements PushStarter {
  readonly #client: LambdaClient;
  readonly #functionArn: string;

  constructor(options: { readonly client: LambdaClient; readonly functionArn: string }) {
    this.#client = options.client;
    this.#functionArn = options.functionArn;
  }

  async start(job: PushJob): Promise<void> {
    try {
      const answer = await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionArn,
          InvocationType: 'Event',
          Payload: new TextEncoder().encode(JSON.stringify(job)),
        }),
      );
      if (answer.StatusCode !== 202)
        throw new Error(`Lambda answered ${answer.StatusCode} to an asynchronous invoke`);
    } catch (error) {
      throw new PushFlowUnavailableError('the push could not be started', { cause: error });
    }
  }
}
