import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import { nodeName } from '../../server/core/names.ts';
import { signalChannel } from '../../server/core/signal/channel.ts';

/** What the host keeps about its enrolment in DIR (`enrolment.json`, mode 0600), for `mesh-host run`. */
const hostEnrolment = z.object({
  api: z.url(),
  node: nodeName,
  thumbprint: z.string().min(1),
  enrolledAt: z.string().min(1),
  /** Where the host waits for its signal: from the enrolment answer, kept current by the declaration route. */
  signal: signalChannel.optional(),
});
export type HostEnrolment = Readonly<z.infer<typeof hostEnrolment>>;

const enrolmentFile = 'enrolment.json';

export async function writeHostEnrolment(dir: string, enrolment: HostEnrolment): Promise<void> {
  const path = join(dir, enrolmentFile);
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(enrolment, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}

/**
 * The enrolment kept in DIR, or undefined when there is none — or none that can be read (cut
 * short, edited by hand): `mesh-host run` then says DIR holds no enrolment instead of failing
 * with a stack trace, and `mesh-host enrol` writes it anew.
 */
export async function readHostEnrolment(dir: string): Promise<HostEnrolment | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, enrolmentFile), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = hostEnrolment.safeParse(parseJson(text));
  return parsed.success ? parsed.data : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
