import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import * as z from 'zod';
import { lineFormatOf, printedLine, say } from '../../../server/core/coded-lines.ts';
import { buildInfo } from '../../common/build-info.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { ReleaseUpgrader, supervisedEnv } from '../agent/agent-upgrade.ts';
import { SealedDeclarationOpener } from '../agent/declaration-opener.ts';
import { FileAgentState } from '../agent/file-state.ts';
import { defaultCheckGraceMs, defaultCheckIntervalMs, defaultCheckTimeoutMs } from '../agent/health-watch.ts';
import { HttpControlPlane } from '../agent/http-control-plane.ts';
import { machineFacts } from '../agent/machine-facts.ts';
import { MqttSignalLink } from '../agent/mqtt-signal-link.ts';
import { defaultSafetyIntervalMs, runHostAgent } from '../agent/run-loop.ts';
import { ShellApplier, ShellHealthCheck } from '../agent/shell-applier.ts';
import { hostApiClient } from '../host-api-client.ts';
import { keysAfterRefusal, settlePromotion } from '../key-rotation.ts';
import { defaultHostDir, loadNodeKeys, signingKeyOf } from '../keys.ts';
import { type AgentLog, agentLines, commandLines, hostPrinter } from '../log-lines.ts';
import { connectPassword, hostRequestSigner } from '../proof.ts';
import { builtInReleaseKeys } from '../release-keys.ts';
import { readHostEnrolment, writeHostEnrolment } from '../state.ts';
import { trialReachedEnv } from '../supervisor.ts';

/** A duration as `--check-interval` and the like take it: seconds (`30`, `0.5`), or `30s`, `5m`, `1h`. */
const duration = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}(\.\d{1,3})?(s|m|h)?$/, { message: `${name} is a duration such as 30, 30s, 5m or 1h` })
    .transform((text) => {
      const unit = text.at(-1);
      const scale = unit === 'h' ? 3600 : unit === 'm' ? 60 : 1;
      return Number.parseFloat(text) * scale;
    })
    .refine((seconds) => seconds >= min && seconds <= max, {
      message: `${name} is from ${min} s to ${max} s`,
    });

const runOptions = z
  .object({
    dir: z.string().min(1),
    apply: z.string().min(1, { message: '--apply needs the command that applies a declaration' }),
    interval: z.coerce.number().min(0.2).max(3600),
    heartbeat: z.coerce.number().min(1).max(86_400),
    safetyInterval: z.coerce
      .number()
      .min(1)
      .max(7 * 86_400),
    api: z.url({ message: '--api must be the control plane URL' }).optional(),
    check: z.string().min(1, { message: '--check needs the command that checks the node' }).optional(),
    checkInterval: duration('--check-interval', 0.2, 86_400).optional(),
    checkGrace: duration('--check-grace', 0, 3600).optional(),
    checkTimeout: duration('--check-timeout', 0.1, 600).optional(),
    revertOnFailure: z.boolean().optional(),
    revertAfterCutoff: duration('--revert-after-cutoff', 1, 86_400).optional(),
  })
  .refine(
    (options) =>
      options.check !== undefined ||
      (options.checkInterval === undefined &&
        options.checkGrace === undefined &&
        options.checkTimeout === undefined),
    { message: '--check-interval, --check-grace and --check-timeout go with --check', path: ['check'] },
  );

/**
 * `mesh-host run [--dir DIR] --apply CMD [--interval S] [--check CMD …] [--revert-on-failure]
 * [--revert-after-cutoff D]`: the enrolled node's loop, on its
 * signal when the control plane names a broker, polling at --interval while it is away. Its
 * lines are for people, or one JSON line each under MESH_LOG_FORMAT=json (lib/clients/host/log-lines.ts). Exit
 * codes: 0 stopped by SIGTERM/SIGINT, 2 usage or not enrolled in DIR, 9 the node was disenrolled
 * or removed (its key is refused and no rotation left a newer one).
 */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('fetch this node’s declaration when it changes, apply it with CMD, and report back')
    .option('--dir <dir>', 'the folder `mesh-host enrol` kept the node keys in', defaultHostDir)
    .requiredOption(
      '--apply <cmd>',
      'run with MESH_DECLARATION (a file path), MESH_REVISION and MESH_NODE set',
    )
    .option(
      '--interval <seconds>',
      'how often to ask for a changed declaration while not on the signal',
      '30',
    )
    .option('--heartbeat <seconds>', 'how often to say "still here" while polling', '180')
    .option(
      '--safety-interval <seconds>',
      'while on the signal, fetch anyway this often',
      String(defaultSafetyIntervalMs / 1000),
    )
    .option('--api <url>', 'the control plane URL (default: the one this node enrolled with)')
    .option('--check <cmd>', 'the health check, run after each apply and every interval: exit 0 is healthy')
    .option('--check-interval <duration>', 'how often the check runs once it has a verdict (default 30s)')
    .option(
      '--check-grace <duration>',
      'how long the check may fail, after an apply or after it passed, before the node is unhealthy (default 30s)',
    )
    .option(
      '--check-timeout <duration>',
      'a run of the check longer than this is stopped and fails (default 10s)',
    )
    .option(
      '--revert-on-failure',
      'when a new declaration fails its apply command or its check, apply the last good one again',
    )
    .option(
      '--revert-after-cutoff <duration>',
      'after an apply, apply the last good declaration again if the control plane cannot be reached for this long (off by default)',
    )
    .action(async (raw: Record<string, unknown>) => {
      process.exitCode = await runAgent(raw);
    });
}

async function runAgent(raw: Record<string, unknown>): Promise<ExitCode> {
  const format = lineFormatOf(process.env.MESH_LOG_FORMAT);
  const print = hostPrinter(format);
  const parsed = runOptions.safeParse(raw);
  if (!parsed.success) {
    const flag = (path: PropertyKey[]) =>
      `--${path.join('.').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const problems = parsed.error.issues.map((issue) => `${flag(issue.path)}: ${issue.message}`);
    print(process.stderr, 'mesh-host: ', commandLines.refusedArguments, { problem: problems.join('; ') });
    return ExitCode.usage;
  }
  const options = parsed.data;
  await settlePromotion(options.dir);
  const enrolment = await readHostEnrolment(options.dir);
  const keys = await loadNodeKeys(options.dir);
  if (!enrolment || !keys) {
    print(process.stderr, 'mesh-host: ', commandLines.notEnrolled, { dir: options.dir });
    return ExitCode.usage;
  }
  const node = enrolment.node;
  const apiUrl = options.api ?? enrolment.api;
  const log: AgentLog = (said) => process.stdout.write(printedLine(said, format, `mesh-host ${node}: `));
  let signingKey = signingKeyOf(node, keys);
  let sealingKey = keys.sealing.privateKey;
  const api = hostApiClient(apiUrl, signingKey);

  const controller = new AbortController();
  const stop = (signal: string) => {
    if (controller.signal.aborted) return;
    log(say(agentLines.stopping, { signal }));
    controller.abort();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));

  log(
    say(agentLines.running, {
      api: apiUrl,
      broker: enrolment.signal?.url ?? null,
      intervalSeconds: options.interval,
      apply: options.apply,
      check: options.check ?? null,
    }),
  );
  let kept = enrolment;
  const ended = await runHostAgent({
    controlPlane: new HttpControlPlane(api, node),
    opener: new SealedDeclarationOpener(node, () => sealingKey),
    applier: new ShellApplier(options.apply, node),
    state: new FileAgentState(options.dir),
    health: {
      check: options.check
        ? new ShellHealthCheck(
            options.check,
            node,
            (options.checkTimeout ?? defaultCheckTimeoutMs / 1000) * 1000,
          )
        : undefined,
      intervalMs: (options.checkInterval ?? defaultCheckIntervalMs / 1000) * 1000,
      graceMs: (options.checkGrace ?? defaultCheckGraceMs / 1000) * 1000,
    },
    revertOnFailure: options.revertOnFailure === true,
    ...(options.revertAfterCutoff === undefined
      ? {}
      : { revertAfterCutoffMs: options.revertAfterCutoff * 1000 }),
    intervalMs: options.interval * 1000,
    heartbeatMs: options.heartbeat * 1000,
    safetyIntervalMs: options.safetyInterval * 1000,
    signalLink: new MqttSignalLink({ clientId: node, password: () => connectPassword(signingKey) }),
    facts: () => machineFacts(options.dir),
    upgrader: new ReleaseUpgrader({
      version: buildInfo().version,
      dir: options.dir,
      node,
      api,
      arch: process.arch,
      builtInKeys: builtInReleaseKeys,
      supervised: process.env[supervisedEnv] === '1',
    }),
    // On trial under the supervisor: the first report taken keeps this release.
    ...(process.env[trialReachedEnv]
      ? {
          onReportTaken: () =>
            writeFileSync(process.env[trialReachedEnv] as string, new Date().toISOString()),
        }
      : {}),
    keyRefused: async () => {
      const now = await keysAfterRefusal(options.dir, apiUrl, node).catch(() => undefined);
      if (!now || now.thumbprint === signingKey.thumbprint) return false;
      signingKey = signingKeyOf(node, now);
      sealingKey = now.sealing.privateKey;
      api.useSigner(hostRequestSigner(signingKey));
      kept = { ...kept, thumbprint: now.thumbprint };
      await writeHostEnrolment(options.dir, kept);
      return true;
    },
    ...(enrolment.signal ? { channel: enrolment.signal } : {}),
    onChannel: async (channel) => {
      kept = { ...kept, signal: channel };
      await writeHostEnrolment(options.dir, kept);
    },
    log,
    signal: controller.signal,
  });
  return ended === 'decommissioned' ? ExitCode.decommissioned : ExitCode.ok;
}
