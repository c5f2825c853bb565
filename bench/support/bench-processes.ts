import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { type Watched, watch } from '../../test/support/processes.ts';
import type { RigProcesses } from '../../tools/fleet/fault-rig.ts';

/** A bench's own processes, as a bed keeps them: a folder, a store it can stop and start, children it stops. */
export class BenchProcesses implements RigProcesses {
  readonly dir: string;
  private readonly children: Array<{ label: string; watched: Watched }> = [];
  private store: RunningDynamoDBLocal | undefined;
  private storePort = 0;

  constructor(name: string) {
    this.dir = mkdtempSync(join(tmpdir(), `mesh-bench-${name}-`));
  }

  async startStore(): Promise<string> {
    this.storePort ||= await freePort();
    this.store = await startDynamoDBLocal({ port: this.storePort, dataDir: join(this.dir, 'store') });
    return this.store.endpoint;
  }

  async stopStore(): Promise<void> {
    await this.store?.stop();
    this.store = undefined;
  }

  spawn(label: string, args: string[], env: NodeJS.ProcessEnv): Watched {
    const watched = watch(process.execPath, args, { env });
    this.children.push({ label, watched });
    return watched;
  }

  /** Every child's output, labelled: what a bench that failed shows. */
  dump(): string {
    return this.children
      .map(({ label, watched }) => `----- ${label} -----\n${watched.output().trimEnd()}`)
      .join('\n');
  }

  async stop(): Promise<void> {
    for (const { watched } of this.children.reverse())
      if (watched.child.exitCode === null && watched.child.signalCode === null) {
        watched.child.kill('SIGTERM');
        await watched.exited();
      }
    await this.stopStore();
  }
}
