import type { Command } from 'commander';
import * as z from 'zod';
import { ApiUnreachableError, problemError } from '../../cli/api-client.ts';
import { ExitCode, exitCodeForStatus } from '../../cli/exit-codes.ts';
import { pendingDir, rotateHostKeys } from '../key-rotation.ts';
import { defaultHostDir, loadNodeKeys, NodeKeysUnreadableError } from '../keys.ts';
import { readHostEnrolment, writeHostEnrolment } from '../state.ts';

const rotateOptions = z.object({
  dir: z.string().min(1),
  api: z.url({ message: '--api must be the control plane URL' }).optional(),
});

/**
 * `mesh-host rotate [--dir DIR] [--api URL]`: replaces the node's keys (lib/host/key-rotation.ts).
 * Exit codes: 0 rotated (or an earlier run's rotation finished), 2 usage or nothing enrolled in
 * DIR, 6 the control plane could not be asked (run again: the new keys wait in DIR/next),
 * 9 this node's key is no longer enrolled, 4 refused otherwise.
 */
export function registerRotateCommand(program: Command): void {
  program
    .command('rotate')
    .description(
      'replace this node’s keys: the new key is proven by the old one, which stops working once the new one does',
    )
    .option('--dir <dir>', 'the folder `mesh-host enrol` kept the node keys in', defaultHostDir)
    .option('--api <url>', 'the control plane URL (default: the one this node enrolled with)')
    .action(async (raw: Record<string, unknown>) => {
      process.exitCode = await runRotate(raw);
    });
}

async function runRotate(raw: Record<string, unknown>): Promise<ExitCode> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const complain = (line: string) => process.stderr.write(`mesh-host: ${line}\n`);
  const parsed = rotateOptions.safeParse(raw);
  if (!parsed.success) {
    complain(parsed.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`).join('; '));
    return ExitCode.usage;
  }
  const { dir } = parsed.data;
  const enrolment = await readHostEnrolment(dir);
  let current: Awaited<ReturnType<typeof loadNodeKeys>>;
  try {
    current = enrolment ? await loadNodeKeys(dir) : undefined;
  } catch (error) {
    if (!(error instanceof NodeKeysUnreadableError)) throw error;
    complain(error.message);
    return ExitCode.usage;
  }
  if (!enrolment || !current) {
    complain(`${dir} holds no enrolment; run mesh-host enrol first`);
    return ExitCode.usage;
  }
  const api = parsed.data.api ?? enrolment.api;
  const { node } = enrolment;
  try {
    const outcome = await rotateHostKeys({ dir, api, node, current });
    if (outcome.kind === 'refused') {
      const problem = problemError(outcome.answer);
      if (outcome.answer.status === 401) {
        complain(
          `the control plane no longer knows node ${node}'s key (${problem.code}): the node was disenrolled or removed; enrol again with a new token`,
        );
        return ExitCode.decommissioned;
      }
      complain(`rotation refused (${problem.code}): ${problem.message}`);
      return exitCodeForStatus(outcome.answer.status);
    }
    await writeHostEnrolment(dir, { ...enrolment, thumbprint: outcome.thumbprint });
    say(
      outcome.kind === 'rotated'
        ? `rotated ${node}'s keys: key ${outcome.previous} replaced by ${outcome.thumbprint}, which the control plane takes now; the old key is refused`
        : `finished an earlier rotation of ${node}'s keys: the control plane had switched to key ${outcome.thumbprint}; it is now the key in ${dir}`,
    );
    return ExitCode.ok;
  } catch (error) {
    if (!(error instanceof ApiUnreachableError)) throw error;
    complain(
      `${error.message}; the new keys wait in ${pendingDir(dir)}: run mesh-host rotate again to finish (a running agent finishes it too, should the control plane have switched already)`,
    );
    return ExitCode.unavailable;
  }
}
