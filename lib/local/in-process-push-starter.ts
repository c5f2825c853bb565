import type { PushJob, PushStarter } from '../server/core/push/runs.ts';
import { awsQuotas, invocation, jsonBytes, payloadTooLarge } from './aws-quotas.ts';
import { asFunction, recordCall } from './call-record.ts';

/**
 * Runs a push in this process (the local runtime, tests): the job runs on its own, as push-run
 * would on AWS, and the request waits on the run itself, not on its record; `running` lets a
 * process wait for its pushes before it stops.
 */
export class InProcessPushStarter implements PushStarter {
  readonly running = new Set<Promise<void>>();
  readonly #run: (job: PushJob) => Promise<void>;

  constructor(run: (job: PushJob) => Promise<void>) {
    this.#run = run;
  }

  async start(job: PushJob, waitMs: number): Promise<boolean> {
    // on AWS the caller invokes push-run, which runs the job with its own role
    recordCall({ stand: 'lambda:InvokeFunction' });
    // Lambda refuses an Event invocation over its payload limit to the caller, before anything runs
    const payloadBytes = jsonBytes(job);
    if (payloadBytes > awsQuotas.asyncPayloadBytes)
      throw payloadTooLarge('push-run', 'request', payloadBytes, awsQuotas.asyncPayloadBytes);
    const run = invocation('push-run', () => asFunction('push-run', () => this.#run(job)), {
      type: 'event',
    }).finally(() => this.running.delete(run));
    // nobody waits on an Event invocation's end: a run Lambda stopped (Sandbox.Timedout) is said here
    run.catch((error: Error) => process.stderr.write(`mesh push-run: ${error.name}: ${error.message}\n`));
    this.running.add(run);
    if (waitMs <= 0) return false;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    try {
      return await Promise.race([run.then(() => true as const), waited]);
    } finally {
      clearTimeout(timer);
    }
  }
}
