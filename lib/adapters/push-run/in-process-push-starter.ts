import type { PushJob, PushStarter } from '../../core/mesh/push-runs.ts';
import { asFunction, recordCall } from '../../runtime/call-record.ts';

/**
 * Starts a push in this process without waiting for it (the local runtime, tests): the job runs
 * on its own, as push-run would on AWS; `running` lets a process wait for its pushes before it
 * stops.
 */
export class InProcessPushStarter implements PushStarter {
  readonly running = new Set<Promise<void>>();
  readonly #run: (job: PushJob) => Promise<void>;

  constructor(run: (job: PushJob) => Promise<void>) {
    this.#run = run;
  }

  async start(job: PushJob): Promise<void> {
    // on AWS the caller invokes push-run, which runs the job with its own role
    recordCall({ stand: 'lambda:InvokeFunction' });
    const run = asFunction('push-run', () => this.#run(job)).finally(() => this.running.delete(run));
    this.running.add(run);
  }
}
