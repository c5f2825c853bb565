import type { ApplyFlow } from '../server/core/mesh-file/ports.ts';
import { recordCall } from './call-record.ts';

/**
 * The apply flow of the local runtime: wakes its driver (lib/local/apply-job-driver.ts), which
 * also finds the running job when it starts. The start is recorded as the StartExecution it
 * stands for, so the rehearsal judges whether the function that asked may start the apply flow.
 */
export class LocalApplyFlow implements ApplyFlow {
  readonly #listeners = new Set<(id: string) => void>();

  async started(id: string): Promise<void> {
    recordCall({ stand: 'states:StartExecution', flow: 'ApplyFlow' });
    for (const listener of this.#listeners) listener(id);
  }

  listen(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
