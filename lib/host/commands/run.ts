import type { Command } from 'commander';
import * as z from 'zod';
import { ExitCode } from '../../cli/exit-codes.ts';
import { lineFormatOf, printedLine, say } from '../../core/coded-lines.ts';
import { SealedDeclarationOpener } from '../agent/declaration-opener.ts';
import { FileAgentState } from '../agent/file-state.ts';
import { HttpControlPlane } from '../agent/http-control-plane.ts';
import { MqttSignalLink } from '../agent/mqtt-signal-link.ts';
import { NodeHttpHostApi } from '../agent/node-http-api.ts';
import { defaultSafetyIntervalMs, runHostAgent } from '../agent/run-loop.ts';
import { ShellApplier } from '../agent/shell-applier.ts';
import { keysAfterRefusal, settlePromotion } from '../key-rotation.ts';
import { defaultHostDir, loadNodeKeys, signingKeyOf } from '../keys.ts';
import { type AgentLog, agentLines, commandLines, hostPrinter } from '../lines.ts';
import { connectPassword } from '../proof.ts';
import { readHostEnrolment, writeHostEnrolment } from '../state.ts';

const runOptions = z.object({
  dir: z.string().min(1),
  apply: z.string().min(1, { message: '--apply needs the command that applies a declaration' }),
  interval: z.coerce.number().min(0.2).max(3600),
  heartbeat: z.coerce.number().min(1).max(86_400),
  safetyInterval: z.coerce
    .number()
    .min(1)
    .max(7 * 86_400),
  api: z.url({ message: '--api must be the control plane URL' }).optional(),
});

/**
 * `mesh-host run [--dir DIR] --apply CMD [--interval S]`: the enrolled node's loop, on its
 * signal when the control plane names a broker, polling at --interval while it is away. Its
 * lines are for people, or one JSON line each under MESH_LOG_FORMAT=json (lib/host/lines.ts). Exit
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
    .action(async (raw: Record<string, unknown>) => {
      process.exitCode = await runAgent(raw);
    });
}

async function runAgent(raw: Record<string, unknown>): Promise<ExitCode> {
  const format = lineFormatOf(process.env.MESH_LOG_FORMAT);
  const print = hostPrinter(format);
  const parsed = runOptions.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `--${issue.path.join('.')}: ${issue.message}`);
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
  const api = new NodeHttpHostApi(apiUrl, signingKey, { timeoutMs: 15_000 });

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
    }),
  );
  let kept = enrolment;
  const ended = await runHostAgent({
    controlPlane: new HttpControlPlane(api, node),
    opener: new SealedDeclarationOpener(node, () => sealingKey),
    applier: new ShellApplier(options.apply, node),
    state: new FileAgentState(options.dir),
    intervalMs: options.interval * 1000,
    heartbeatMs: options.heartbeat * 1000,
    safetyIntervalMs: options.safetyInterval * 1000,
    signalLink: new MqttSignalLink({ clientId: node, password: () => connectPassword(signingKey) }),
    keyRefused: async () => {
      const now = await keysAfterRefusal(options.dir, apiUrl, node).catch(() => undefined);
      if (!now || now.thumbprint === signingKey.thumbprint) return false;
      signingKey = signingKeyOf(node, now);
      sealingKey = now.sealing.privateKey;
      api.useKey(signingKey);
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
