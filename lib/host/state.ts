import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the host keeps about its enrolment in DIR (`enrolment.json`, mode 0600), for `mesh-host run`. */
export type HostEnrolment = {
  readonly api: string;
  readonly node: string;
  readonly thumbprint: string;
  readonly enrolledAt: string;
};

const enrolmentFile = 'enrolment.json';

export async function writeHostEnrolment(dir: string, enrolment: HostEnrolment): Promise<void> {
  const path = join(dir, enrolmentFile);
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(enrolment, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}

export async function readHostEnrolment(dir: string): Promise<HostEnrolment | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, enrolmentFile), 'utf8')) as HostEnrolment;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
