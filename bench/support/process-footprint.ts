import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { median } from './stats.ts';

/** One reading of a process's memory from /proc/PID/status, in KiB. */
export type MemoryReading = { readonly rss: number; readonly anon: number; readonly file: number };

export function readMemory(pid: number): MemoryReading {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
}

/** CPU time the process has used, user and system, in milliseconds. */
export function readCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
}

/**
 * Time the process's threads have run on a CPU, in milliseconds, as the scheduler counts it in
 * nanoseconds (readCpuMs counts 10 ms clock ticks). Threads that have ended are not counted:
 * Node's (the main thread, libuv's pool, V8's platform workers) live as long as the process.
 */
export function readRunTimeMs(pid: number): number {
  let nanoseconds = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      nanoseconds += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return nanoseconds / 1e6;
}

let ticks: number | undefined;
function clockTicks(): number {
  ticks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticks;
}

export type Footprint = {
  readonly rssMaxKb: number;
  readonly rssMedianKb: number;
  readonly anonMedianKb: number;
  readonly fileMedianKb: number;
  readonly cpuMs: number;
  readonly seconds: number;
};

/** Samples each process every second for DURATION and gives its memory and the CPU it used meanwhile. */
export async function watchFootprints(pids: readonly number[], durationMs: number): Promise<Footprint[]> {
  const cpuAtStart = pids.map(readCpuMs);
  const readings: MemoryReading[][] = pids.map(() => []);
  const started = performance.now();
  while (performance.now() - started < durationMs) {
    for (const [index, pid] of pids.entries()) readings[index]?.push(readMemory(pid));
    await sleep(1000);
  }
  const seconds = (performance.now() - started) / 1000;
  return pids.map((pid, index) => {
    const taken = readings[index] ?? [];
    return {
      rssMaxKb: Math.max(...taken.map((reading) => reading.rss)),
      rssMedianKb: median(taken.map((reading) => reading.rss)),
      anonMedianKb: median(taken.map((reading) => reading.anon)),
      fileMedianKb: median(taken.map((reading) => reading.file)),
      cpuMs: readCpuMs(pid) - (cpuAtStart[index] ?? 0),
      seconds,
    };
  });
}

/**
 * Copies an executable so that none of it is in the page cache: a just-built binary sits whole
 * in the cache, and the kernel then maps more of it into a process than a machine that started
 * it from disk would (fault-around), which would overstate the file-backed part of its RSS.
 */
export function copyUncached(from: string, to: string): void {
  execFileSync('dd', [`if=${from}`, `of=${to}`, 'bs=4M', 'conv=fsync', 'oflag=nocache', 'status=none']);
  execFileSync('dd', [`if=${to}`, 'iflag=nocache', 'count=0', 'status=none']);
  execFileSync('chmod', ['0755', to]);
}
