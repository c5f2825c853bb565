import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { PushFlowUnavailableError } from '../../core/mesh/errors.ts';
import type { PushJob, PushStarter } from '../../core/push/runs.ts';

/**
 * Runs a push in the `push-run` function. Waited for, it is a synchronous invoke whose answer
 * is the push being done; when the wait is up the request is let go and the push runs on (a
 * Lambda invocation does not stop when its caller stops listening, as with API Gateway's own
 * timeout). Not waited for, it is an asynchronous invoke (Event), queued and answered at once.
 * The client must not retry (maxAttempts 1): a retried invoke could push twice.
 */
export class LambdaPushStarter implements PushStarter {
  readonly #client: LambdaClient;
  readonly #functionArn: string;

  constructor(options: { readonly client: LambdaClient; readonly functionArn: string }) {
    this.#client = options.client;
    this.#functionArn = options.functionArn;
  }

  async start(job: PushJob, waitMs: number): Promise<boolean> {
    const waits = waitMs > 0;
    const letGo = new AbortController();
    const timer = waits ? setTimeout(() => letGo.abort(), waitMs) : undefined;
    try {
      const answer = await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionArn,
          InvocationType: waits ? 'RequestResponse' : 'Event',
          Payload: new TextEncoder().encode(JSON.stringify(job)),
        }),
        { abortSignal: letGo.signal },
      );
      if (answer.StatusCode !== (waits ? 200 : 202))
        throw new Error(`Lambda answered ${answer.StatusCode} to an invoke`);
      return waits;
    } catch (error) {
      if (letGo.signal.aborted) return false;
      throw new PushFlowUnavailableError('the push could not be started', { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }
}
