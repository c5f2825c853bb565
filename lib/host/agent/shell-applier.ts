import { spawn } from 'node:child_process';
import type { Applier, ApplyResult } from './ports.ts';

/**
 * Runs the operator's apply command through the shell with the declaration's path and revision
 * in its environment (MESH_DECLARATION, MESH_REVISION, MESH_NODE). Its output goes to the
 * agent's own, so the operator sees what the hook said.
 */
export class ShellApplier implements Applier {
  private readonly command: string;
  private readonly node: string;
  private readonly write: (chunk: Buffer) => void;

  constructor(
    command: string,
    node: string,
    write: (chunk: Buffer) => void = (chunk) => process.stdout.write(chunk),
  ) {
    this.command = command;
    this.node = node;
    this.write = write;
  }

  apply(declarationPath: string, revision: number, signal: AbortSignal): Promise<ApplyResult> {
    return new Promise((resolve) => {
      const child = spawn('/bin/sh', ['-c', this.command], {
        env: {
          ...process.env,
          MESH_DECLARATION: declarationPath,
          MESH_REVISION: String(revision),
          MESH_NODE: this.node,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so stopping it stops whatever the hook started too.
        detached: true,
      });
      child.stdout.on('data', this.write);
      child.stderr.on('data', this.write);
      const stop = () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGTERM');
        } catch {
          child.kill('SIGTERM');
        }
      };
      signal.addEventListener('abort', stop, { once: true });
      child.once('error', (error) => {
        signal.removeEventListener('abort', stop);
        resolve({ ok: false, reason: `could not run the apply command: ${error.message}` });
      });
      child.once('exit', (code, killed) => {
        signal.removeEventListener('abort', stop);
        if (code === 0) resolve({ ok: true });
        else
          resolve({
            ok: false,
            reason: killed
              ? `the apply command was stopped by ${killed}`
              : `the apply command exited ${code}`,
          });
      });
    });
  }
}
