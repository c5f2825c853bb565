import type { Command } from 'commander';
import * as z from 'zod';
import { lineFormatOf } from '../../../server/core/coded-lines.ts';
import { ExitCode, exitCodeForStatus } from '../../common/exit-codes.ts';
import { ApiUnreachableError, problemError } from '../../http/api-client.ts';
import { pendingDir, rotateHostKeys } from '../key-rotation.ts';
import { defaultHostDir, loadNodeKeys, NodeKeysUnreadableError } from '../keys.ts';
import { commandLines, hostPrinter } from '../log-lines.ts';
import { readHostEnrolment, writeHostEnrolment } from '../state.ts';

const rotateOptions = z.object({
  dir: z.string().min(1),
  api: z.url({ message: '--api must be the control plane URL' }).optional(),
});

/**
 * `mesh-host rotate [--dir DIR] [--api URL]`: replaces the node's keys (lib/clients/host/key-rotation.ts).
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
  const print = hostPrinter(lineFormatOf(process.env.MESH_LOG_FORMAT));
  const complain = (problem: string) =>
    print(process.stderr, 'mesh-host: ', commandLines.refusedArguments, { problem });
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
    print(process.stderr, 'mesh-host: ', commandLines.notEnrolled, { dir });
    return ExitCode.usage;
  }
  const api = parsed.data.api ?? enrolment.api;
  const { node } = enrolment;
  try {
    const outcome = await rotateHostKeys({ dir, api, node, current });
    if (outcome.kind === 'refused') {
      const problem = problemError(outcome.answer);
      if (outcome.answer.status === 401) {
        print(process.stderr, 'mesh-host: ', commandLines.rotationUnknownKey, { node, reason: problem.code });
        return ExitCode.decommissioned;
      }
      print(process.stderr, 'mesh-host: ', commandLines.rotationRefused, {
        reason: problem.code,
        status: outcome.answer.status,
        detail: problem.message,
      });
      return exitCodeForStatus(outcome.answer.status);
    }
    await writeHostEnrolment(dir, { ...enrolment, thumbprint: outcome.thumbprint });
    if (outcome.kind === 'rotated')
      print(process.stdout, '', commandLines.rotated, {
        node,
        previous: outcome.previous,
        thumbprint: outcome.thumbprint,
      });
    else
      print(process.stdout, '', commandLines.rotationFinished, { node, thumbprint: outcome.thumbprint, dir });
    return ExitCode.ok;
  } catch (error) {
    if (!(error instanceof ApiUnreachableError)) throw error;
    print(process.stderr, 'mesh-host: ', commandLines.rotationUnfinished, {
      reason: error.message,
      pending: pendingDir(dir),
    });
    return ExitCode.unavailable;
  }
}
