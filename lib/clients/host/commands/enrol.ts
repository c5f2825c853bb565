import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, Option } from 'commander';
import * as z from 'zod';
import { lineFormatOf } from '../../../server/core/coded-lines.ts';
import { tokenString } from '../../../server/core/enrolment/token.ts';
import { nodeName } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { defaultPatienceMs, enrolRequestBody, presentEnrolment, sendEnrolment } from '../enrol.ts';
import { defaultHostDir, loadOrCreateNodeKeys, NodeKeysUnreadableError } from '../keys.ts';
import { commandLines, hostPrinter } from '../log-lines.ts';
import { writeHostEnrolment } from '../state.ts';
import { chooseToken } from '../token-source.ts';

const enrolOptions = z.object({
  api: z.url({ message: '--api must be the control plane URL' }),
  node: nodeName,
  token: tokenString,
  dir: z.string().min(1),
  patience: z.coerce.number().int().min(0).max(3600),
});

/**
 * `mesh-host enrol --api URL --node NODE [--token-file FILE] [--dir DIR]`, the token from
 * MESH_TOKEN or FILE (`--token TOKEN` works too, with a warning). Exit codes: 0 enrolled,
 * 2 usage (or keys in DIR that cannot be read), 6 nothing answers at --api, 7 wait then run
 * again (held, store away, or the control plane failed), 8 refused (unknown, expired, revoked,
 * spent).
 */
export function registerEnrolCommand(program: Command): void {
  program
    .command('enrol')
    .description('enrol this machine as NODE with a one-time token; keys stay in DIR')
    .requiredOption('--api <url>', 'the control plane URL')
    .requiredOption('--node <node>', 'the node this machine is')
    .addOption(
      new Option(
        '--token <token>',
        'the one-time token; on a command line every user can read it, so prefer MESH_TOKEN or --token-file',
      ).env('MESH_TOKEN'),
    )
    .option(
      '--token-file <file>',
      'read the one-time token from FILE (`mesh token issue --out FILE` writes one)',
    )
    .option('--dir <dir>', 'where the node keys are kept (owner-only)', defaultHostDir)
    .option(
      '--patience <seconds>',
      'how long to keep asking while told "try again"',
      String(defaultPatienceMs / 1000),
    )
    .action(async (raw: Record<string, unknown>, command: Command) => {
      process.exitCode = await runEnrol({ ...raw, tokenFrom: command.getOptionValueSource('token') });
    });
}

async function runEnrol(
  raw: Record<string, unknown>,
  streams: { out: NodeJS.WritableStream; err: NodeJS.WritableStream } = {
    out: process.stdout,
    err: process.stderr,
  },
): Promise<ExitCode> {
  const print = hostPrinter(lineFormatOf(process.env.MESH_LOG_FORMAT));
  const complain = (problem: string) =>
    print(streams.err, 'mesh-host: ', commandLines.refusedArguments, { problem });
  const chosen = await chooseToken({
    token: raw.token as string | undefined,
    tokenFrom: raw.tokenFrom as string | undefined,
    tokenFile: raw.tokenFile as string | undefined,
  });
  if (!chosen.ok) {
    complain(chosen.problem);
    return ExitCode.usage;
  }
  for (const warning of chosen.warnings) print(streams.err, 'mesh-host: ', commandLines.warning, { warning });
  const parsed = enrolOptions.safeParse({ ...raw, token: chosen.token });
  if (!parsed.success) {
    // Never echo the input: it may hold the token.
    const problems = parsed.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`);
    complain(problems.join('; '));
    return ExitCode.usage;
  }
  const options = parsed.data;
  let nodeKeys: Awaited<ReturnType<typeof loadOrCreateNodeKeys>>;
  try {
    nodeKeys = await loadOrCreateNodeKeys(options.dir);
  } catch (error) {
    if (!(error instanceof NodeKeysUnreadableError)) throw error;
    complain(error.message);
    return ExitCode.usage;
  }
  const { keys, created } = nodeKeys;
  print(streams.err, '', commandLines.keys, { created, dir: options.dir, thumbprint: keys.thumbprint });
  const body = enrolRequestBody(options.node, options.token, keys);
  const outcome = await presentEnrolment({
    send: () => sendEnrolment(options.api, body),
    sleep: (ms) => sleep(ms),
    now: () => Date.now(),
    random: Math.random,
    patienceMs: options.patience * 1000,
    onRetry: (waitMs, reason) =>
      print(streams.err, '', commandLines.toldToTryAgain, { reason, waitSeconds: waitMs / 1000 }),
  });
  switch (outcome.kind) {
    case 'enrolled':
      await writeHostEnrolment(options.dir, {
        api: options.api,
        node: outcome.node,
        thumbprint: outcome.thumbprint,
        enrolledAt: outcome.enrolledAt,
        ...(outcome.signal ? { signal: outcome.signal } : {}),
      });
      print(streams.out, '', commandLines.enrolled, {
        node: outcome.node,
        enrolledAt: outcome.enrolledAt,
        thumbprint: outcome.thumbprint,
        dir: options.dir,
      });
      return ExitCode.ok;
    case 'wait':
      print(streams.err, 'mesh-host: ', commandLines.wait, {
        reason: outcome.reason,
        explained: waitReason(outcome.reason),
      });
      print(streams.out, '', commandLines.waitSeconds, { waitSeconds: outcome.waitSeconds });
      return ExitCode.waitThenRetry;
    case 'refused':
      print(streams.err, 'mesh-host: ', commandLines.refused, {
        reason: outcome.code,
        status: outcome.status,
        detail: outcome.message,
      });
      return outcome.status === 400 || outcome.status === 413 ? ExitCode.usage : ExitCode.enrolRefused;
    case 'unreachable':
      print(streams.err, 'mesh-host: ', commandLines.unreachable, {
        api: options.api,
        reason: outcome.message,
      });
      return ExitCode.unavailable;
  }
}

function waitReason(code: string): string {
  if (code === 'token_held') return 'the token is still held by another attempt';
  if (code === 'try_again') return 'the control plane cannot reach its store';
  return 'the control plane did not answer or failed';
}
