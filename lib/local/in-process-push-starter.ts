import type { PushInvocation, PushJob, PushStarter } from '../server/core/push/runs.ts';
import { awsQuotas, functionLimits, invocation, jsonBytes, payloadTooLarge } from './aws-quotas.ts';
import { asFunction, recordCall } from './call-record.ts';

/**
 * Runs a push in this process (the local runtime, tests): the job runs on its own, as push-run
 * would on AWS, in an invocation held to push-run's timeout, told its time left and handing the
 * job on to a fresh invocation as push-run does. The request waits on the run itself and the
 * invocations it was handed on to, not on its record; `running` lets a process wait for its
 * pushes before it stops.
 */
export class InProcessPushStarter implements PushStarter {
  readonly running = new Set<Promise<void>>();
  /** How many invocations of push-run ran (each hand-over is one more). */
  invocations = 0;
  readonly #run: (job: PushJob, invoked: PushInvocation) => Promise<void>;
  readonly #timeoutSeconds: number | undefined;

  /** `timeoutSeconds` shortens push-run's timeout (a test that sees a push handed on). */
  constructor(
    run: (job: PushJob, invoked: PushInvocation) => Promise<void>,
    options: { readonly timeoutSeconds?: number } = {},
  ) {
    this.#run = run;
    this.#timeoutSeconds = options.timeoutSeconds;
  }

  async start(job: PushJob, waitMs: number): Promise<boolean> {
    const whole = this.#invoke(job);
    if (waitMs <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    try {
      return await Promise.race([whole.then(() => true as const), waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One asynchronous invocation of push-run; settles when the push's last invocation (this one,
   * or the last it was handed on to) ends. Throws at once what Lambda refuses to the caller.
   */
  #invoke(job: PushJob): Promise<void> {
    // on AWS the caller invokes push-run, which runs the job with its own role
    recordCall({ stand: 'lambda:InvokeFunction' });
    // Lambda refuses an Event invocation over its payload limit to the caller, before anything runs
    const payloadBytes = jsonBytes(job);
    if (payloadBytes > awsQuotas.asyncPayloadBytes)
      throw payloadTooLarge('push-run', 'request', payloadBytes, awsQuotas.asyncPayloadBytes);
    const timeoutSeconds = this.#timeoutSeconds ?? functionLimits('push-run').timeoutSeconds;
    const deadline = Date.now() + timeoutSeconds * 1000;
    let next: Promise<void> | undefined;
    const invoked: PushInvocation = {
      remainingMs: () => Math.max(0, deadline - Date.now()),
      handOn: async (handed) => {
        next = this.#invoke(handed);
      },
    };
    this.invocations += 1;
    const run = invocation('push-run', () => asFunction('push-run', () => this.#run(job, invoked)), {
      type: 'event',
      timeoutSeconds,
    }).finally(() => this.running.delete(run));
    // nobody waits on an Event invocation's end: a run Lambda stopped (Sandbox.Timedout) is said here
    run.catch((error: Error) => process.stderr.write(`mesh push-run: ${error.name}: ${error.message}\n`));
    this.running.add(run);
    const whole = run.then(() => next);
    // said above when it fails; a caller that waits on it is told as well
    whole.catch(() => undefined);
    return whole;
  }
}
