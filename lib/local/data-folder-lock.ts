import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalRuntimeError } from './errors.ts';

/**
 * One control plane per data folder. Two would start two DynamoDB Locals on the same database
 * file and two fauxqs on the same queues, each overwriting the other's writes without a word. A
 * start puts `mesh.lock` in the folder (its pid, when that process started, and its children's
 * pids once they run), made whole beside it and linked in place, so a lock is never seen half
 * written; a folder whose lock names a live process is refused. A lock whose process is gone (a
 * `kill -9`, a crash) is taken over, and any child it names still running (a DynamoDB Local of
 * an older launcher, which did not notice its parent go) is stopped first.
 */
export type DataFolderLock = {
  readonly path: string;
  /** Notes the processes this control plane started, so a start after a crash can find them. */
  noteChildren(pids: readonly number[]): void;
  release(): void;
};

type LockContent = {
  readonly pid: number;
  /** The process's start time as the kernel keeps it, where it can be read: a pid reused is not the holder. */
  readonly started?: string;
  readonly children: readonly number[];
};

export class DataFolderInUseError extends LocalRuntimeError {
  override name = 'DataFolderInUseError';
  constructor(folder: string, pid: number) {
    super(
      `the data folder ${folder} is in use by another control plane (pid ${pid}): stop it (Ctrl-C where it runs, or kill ${pid}), or choose another folder with MESH_DATA`,
    );
  }
}

export const lockFileName = 'mesh.lock';

/** Fields 3 on of /proc/PID/stat (the command, field 2, may hold spaces and parentheses), or undefined where there is none. */
function statOf(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** When a process started (field 22 of /proc/PID/stat). */
const startOf = (pid: number): string | undefined => statOf(pid)?.[19];

/** Whether the process a lock names still runs: its pid is alive and, where it can be told, started when it did. */
function holds(content: LockContent): boolean {
  try {
    process.kill(content.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = statOf(content.pid);
  // killed and not yet reaped by whoever started it: gone all the same
  if (stat?.[0] === 'Z') return false;
  const started = stat?.[19];
  return content.started === undefined || started === undefined || started === content.started;
}

const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
};

function readLock(path: string): LockContent | undefined {
  try {
    const content = JSON.parse(readFileSync(path, 'utf8')) as LockContent;
    return typeof content.pid === 'number' ? { ...content, children: content.children ?? [] } : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `content` beside `path` and moves it in place: over it (`replace`), or only if there is none. */
function place(path: string, content: LockContent, replace: boolean): boolean {
  const beside = `${path}.${process.pid}-${randomBytes(4).toString('hex')}`;
  writeFileSync(beside, `${JSON.stringify(content)}\n`, { mode: 0o600 });
  try {
    if (replace) renameSync(beside, path);
    else linkSync(beside, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    rmSync(beside, { force: true });
  }
}

/**
 * Takes the data folder for this process, or throws DataFolderInUseError naming the process that
 * holds it. `said` is told when a lock left by a process that is gone is taken over.
 */
export function lockDataFolder(folder: string, said: (line: string) => void = () => {}): DataFolderLock {
  const path = join(folder, lockFileName);
  let content: LockContent = { pid: process.pid, ...withStart(), children: [] };
  for (let attempt = 0; ; attempt += 1) {
    if (place(path, content, false)) break;
    const holder = readLock(path);
    if (holder && holds(holder)) throw new DataFolderInUseError(folder, holder.pid);
    if (attempt >= 3) throw new DataFolderInUseError(folder, holder?.pid ?? 0);
    // Left by a control plane that is gone: its children first, then its lock.
    for (const child of holder?.children ?? []) {
      if (!commandOf(child).includes('LoopbackDynamoDBLocal')) continue;
      try {
        process.kill(child, 'SIGKILL');
        said(`stopped DynamoDB Local (pid ${child}), left running by a control plane that is gone`);
      } catch {
        // gone meanwhile
      }
    }
    const stale = `${path}.stale-${process.pid}`;
    try {
      renameSync(path, stale);
      rmSync(stale, { force: true });
      said(`took over the data folder from a control plane that is gone (pid ${holder?.pid ?? 'unknown'})`);
    } catch {
      // another start took it over first: its lock is read on the next attempt
    }
  }
  return {
    path,
    noteChildren(pids) {
      content = { ...content, children: [...content.children, ...pids] };
      place(path, content, true);
    },
    release() {
      if (readLock(path)?.pid === process.pid) rmSync(path, { force: true });
    },
  };
}

function withStart(): { readonly started?: string } {
  const started = startOf(process.pid);
  return started === undefined ? {} : { started };
}
