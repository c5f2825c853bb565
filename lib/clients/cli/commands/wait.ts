import type { Command } from 'commander';
import * as z from 'zod';
import { nodeName } from '../../../server/core/names.ts';
import { rolloutIdPattern } from '../../../server/core/rollout/service.ts';
import type { NodeStatus } from '../../../server/core/views/ports.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import type { ApiClient } from '../../http/api-client.ts';
import { action, usage } from '../command-context.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { timeoutMs } from '../watch.ts';
import { followApplyJob, printJob } from './apply-job.ts';
import { followPush } from './push.ts';
import { followRollout } from './rollout.ts';

/** How often `mesh wait node` reads the node: a host reports within seconds of a signal. */
const nodePollMs = 2_000;

type WaitOptions = { timeout: string; for?: string };

/**
 * Waits for `body`, or for the timeout: what a wait follows goes on on the control plane
 * whichever ends first, so a timeout changes nothing and is said, with its own exit code.
 */
async function within(output: Output, what: string, options: WaitOptions, body: () => Promise<ExitCode>) {
  const ms = timeoutMs(options.timeout);
  if (ms === undefined) {
    output.say(cliLines.usage, {
      argument: '--timeout',
      problem: 'a timeout is 1s to 24h, written 90s, 10m or 2h',
    });
    return ExitCode.usage;
  }
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timed out'>((resolve) => {
    timer = setTimeout(() => resolve('timed out'), ms);
  });
  const ended = await Promise.race([body(), timedOut]);
  clearTimeout(timer);
  if (ended !== 'timed out') return ended;
  output.say(cliLines.waitTimedOut, { what, timeout: options.timeout });
  output.result({ error: { code: 'wait_timed_out', message: `${what}: not yet after ${options.timeout}` } });
  // the follower's next read is still pending: the wait is over, so is the process
  process.exit(ExitCode.waitTimedOut);
}

/** Whether a node reached what `mesh wait node --for` names, failed it, or is still on its way. */
export function nodeReached(
  status: NodeStatus,
  goal: 'applied' | 'healthy',
): 'reached' | 'failed' | 'waiting' {
  const sent = status.sentRevision;
  if (sent === null) return 'waiting';
  if (status.reportState === 'failed' && status.appliedRevision !== sent) return 'failed';
  const applied = status.appliedRevision === sent && !status.behind;
  if (!applied) return 'waiting';
  if (goal === 'applied') return 'reached';
  if (!status.health || status.health.revision !== sent) return 'waiting';
  if (status.health.state === 'unhealthy') return 'failed';
  return status.health.state === 'healthy' ? 'reached' : 'waiting';
}

async function waitNode(api: ApiClient, output: Output, node: string, goal: 'applied' | 'healthy') {
  let said = '';
  for (;;) {
    // one node's details carry its status (sent, applied, behind, its latest report, health)
    const status = await api.call<NodeStatus>('GET', `/nodes/${node}`);
    const reached = nodeReached(status, goal);
    if (reached !== 'waiting') return judged(output, status, goal);
    const line = `${status.sentRevision ?? '-'}/${status.appliedRevision ?? '-'}/${status.health?.state ?? '-'}`;
    if (line !== said)
      output.say(cliLines.waitNode, {
        node,
        goal,
        sent: status.sentRevision,
        applied: status.appliedRevision,
        health: status.health?.state ?? null,
      });
    said = line;
    await new Promise((resolve) => setTimeout(resolve, nodePollMs));
  }
}

function judged(output: Output, status: NodeStatus, goal: 'applied' | 'healthy'): ExitCode {
  const reached = nodeReached(status, goal);
  output.result(status);
  if (reached === 'reached') {
    output.line(`${status.node} ${goal} at revision ${status.sentRevision}`);
    return ExitCode.ok;
  }
  output.say(cliLines.waitNodeFailed, {
    node: status.node,
    goal,
    revision: status.sentRevision ?? 0,
    reason:
      status.reportState === 'failed'
        ? 'its host reported the apply failed'
        : `its check says unhealthy${status.health?.reason ? `: ${status.health.reason}` : ''}`,
  });
  return ExitCode.waitFailed;
}

const rolloutId = z.string().regex(rolloutIdPattern, 'a rollout id looks like 20260722T101500123Z-4f2a9c');
const jobId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'an apply job id, as mesh apply named it');
const pushId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'a push id, as mesh push named it');

/**
 * `mesh wait push ID | rollout ID | apply-job ID | node NODE --for applied|healthy [--timeout D]`,
 * as `kubectl wait` and `argocd app wait`: blocks until it happened and exits as the thing
 * ended (a push 0 or 5, a rollout 0, 11, 12, 13 or 16, a job 0 or its refusal, a node 0 or 18),
 * or exits 17 when the timeout passes first.
 */
export function registerWaitCommand(program: Command): void {
  const wait = program
    .command('wait')
    .description('wait for a push, a rollout, an apply job or a node, up to --timeout (exit 17 past it)');
  const timeout = (command: Command) =>
    command.option('--timeout <duration>', 'how long to wait: 90s, 10m, 2h', '10m');

  timeout(wait.command('push').argument('<id>', 'the push, as mesh push --no-wait named it'))
    .description('until the push is done; exits as mesh push would (0 consistent, 5 still behind)')
    .action(
      action(async ({ api, output }, raw: string, options: WaitOptions) => {
        const id = pushId.safeParse(raw);
        if (!id.success) return usage(output, id.error);
        return within(output, `push ${id.data}`, options, () => followPush(api, output, id.data));
      }),
    );

  timeout(wait.command('rollout').argument('<id>', 'the rollout'))
    .description(
      'until the rollout ends; exits as it ended (0 done, 11 halted, 12 paused, 13 aborted, 16 undone)',
    )
    .action(
      action(async ({ api, output }, raw: string, options: WaitOptions) => {
        const id = rolloutId.safeParse(raw);
        if (!id.success) return usage(output, id.error);
        return within(output, `rollout ${id.data}`, options, () => followRollout(api, output, id.data));
      }),
    );

  timeout(wait.command('apply-job').argument('<id>', 'the apply job, as mesh apply --no-wait named it'))
    .description('until the apply job is done; a failed job exits as its refusal')
    .action(
      action(async ({ api, output }, raw: string, options: WaitOptions) => {
        const id = jobId.safeParse(raw);
        if (!id.success) return usage(output, id.error);
        return within(output, `apply job ${id.data}`, options, async () => {
          const job = await followApplyJob(api, output, id.data);
          output.result(job);
          printJob(output, job);
          return ExitCode.ok;
        });
      }),
    );

  timeout(wait.command('node').argument('<node>', 'the node'))
    .requiredOption(
      '--for <state>',
      'applied: its host applied what it was last sent; healthy: and its check passed',
    )
    .description(
      "until the node's host applied the revision it was sent (and, --for healthy, its check passed); 18 when it failed",
    )
    .action(
      action(async ({ api, output }, raw: string, options: WaitOptions) => {
        const parsed = z
          .object({
            node: nodeName,
            goal: z.enum(['applied', 'healthy'], { message: '--for is applied or healthy' }),
          })
          .safeParse({ node: raw, goal: options.for });
        if (!parsed.success) return usage(output, parsed.error);
        const { node, goal } = parsed.data;
        return within(output, `node ${node} ${goal}`, options, () => waitNode(api, output, node, goal));
      }),
    );
}
