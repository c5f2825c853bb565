import { LambdaClient } from '@aws-sdk/client-lambda';
import { describe, expect, it } from 'vitest';
import { LambdaPushStarter } from '../../lib/server/adapters/push/lambda-push-starter.ts';
import { PushFlowUnavailableError } from '../../lib/server/core/mesh/errors.ts';

type Seen = { invocationType: string | undefined; aborted: boolean };

/** A Lambda client whose invoke answers `status` after `afterMs`, or is let go by its caller first (no network). */
function lambdaAnswering(status: number, afterMs: number, seen: Seen[]) {
  return new LambdaClient({
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    requestHandler: {
      handle: (request: { headers: Record<string, string> }, options?: { abortSignal?: AbortSignal }) => {
        const entry: Seen = { invocationType: request.headers['x-amz-invocation-type'], aborted: false };
        seen.push(entry);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(
            () =>
              resolve({
                response: { statusCode: status, headers: {}, body: new TextEncoder().encode('null') },
              }),
            afterMs,
          );
          options?.abortSignal?.addEventListener('abort', () => {
            clearTimeout(timer);
            entry.aborted = true;
            reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
          });
        });
      },
    } as never,
  });
}

const job = {
  pushId: '20260722T101500123Z-4f2a9c',
  request: { behind: true },
  requestedBy: 'operator',
};
const functionArn = 'arn:aws:lambda:us-east-1:000000000000:function:push-run';

describe('LambdaPushStarter', () => {
  it('waits on a synchronous invoke: done when push-run answers in time', async () => {
    const seen: Seen[] = [];
    const starter = new LambdaPushStarter({ client: lambdaAnswering(200, 20, seen), functionArn });

    const done = await starter.start(job, 1_000);

    expect([done, seen]).toEqual([true, [{ invocationType: 'RequestResponse', aborted: false }]]);
  });

  it('lets a waited invoke go when the wait is up, once: the push runs on', async () => {
    const seen: Seen[] = [];
    const starter = new LambdaPushStarter({ client: lambdaAnswering(200, 5_000, seen), functionArn });

    const asked = Date.now();
    const done = await starter.start(job, 100);

    expect([done, seen]).toEqual([false, [{ invocationType: 'RequestResponse', aborted: true }]]);
    expect(Date.now() - asked).toBeLessThan(1_000);
  });

  it('starts an asynchronous invoke when nobody waits', async () => {
    const seen: Seen[] = [];
    const starter = new LambdaPushStarter({ client: lambdaAnswering(202, 0, seen), functionArn });

    expect(await starter.start(job, 0)).toBe(false);
    expect(seen).toEqual([{ invocationType: 'Event', aborted: false }]);
  });

  it('is "not now" when Lambda does not take the invoke', async () => {
    const starter = new LambdaPushStarter({ client: lambdaAnswering(429, 0, []), functionArn });

    await expect(starter.start(job, 1_000)).rejects.toBeInstanceOf(PushFlowUnavailableError);
  });
});
