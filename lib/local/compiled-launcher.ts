import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { makePrivateFolder } from './data-folder.ts';

/** The launcher's class name, as compiled from `LoopbackDynamoDBLocal.java`. */
export const launcherClass = 'LoopbackDynamoDBLocal';

/** The `java` the PATH names, its links followed: the JDK a `javac` beside it belongs to. */
function javaOnPath(): string | undefined {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    if (!folder) continue;
    const candidate = join(folder, 'java');
    try {
      accessSync(candidate, constants.X_OK);
      return realpathSync(candidate);
    } catch {}
  }
  return undefined;
}

/**
 * The folder holding the launcher compiled by the `javac` of the JDK whose `java` will run it,
 * compiled once and kept under `cacheRoot` by the source's and the JDK's digest; undefined when
 * that Java has no `javac` beside it, or it fails, and the launcher is then run from its source.
 * A start from source compiles it in the JVM each time: about 1.5 s of CPU more a start (3.7 s
 * against 2.2 s), which the run of the tests pays a couple of dozen times.
 */
export async function compiledLauncher(
  source: string,
  classPath: string,
  cacheRoot: string,
): Promise<string | undefined> {
  const java = javaOnPath();
  if (!java) return undefined;
  const javac = join(dirname(java), 'javac');
  if (!existsSync(javac)) return undefined;
  const digest = createHash('sha256').update(readFileSync(source)).update(java).digest('hex').slice(0, 16);
  const folder = join(cacheRoot, digest);
  if (existsSync(join(folder, `${launcherClass}.class`))) return folder;
  // Compiled beside, then moved in whole: starts side by side never see half a class.
  const making = `${folder}.${process.pid}-${randomBytes(4).toString('hex')}`;
  makePrivateFolder(making);
  try {
    await promisify(execFile)(javac, ['-cp', classPath, '-d', making, source]);
    renameSync(making, folder);
  } catch {
    rmSync(making, { recursive: true, force: true });
  }
  return existsSync(join(folder, `${launcherClass}.class`)) ? folder : undefined;
}
