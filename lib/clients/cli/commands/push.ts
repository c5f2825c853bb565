import type { Command } from 'commander';
import * as z from 'zod';
import { answeredStatus } from '../../../server/core/error-table.ts';
import type { Declaration } from '../../../server/core/mesh/declaration.ts';
import type { DeclarationChange } from '../../../server/core/mesh/declaration-diff.ts';
import { pushFailures } from '../../../server/core/mesh/errors.ts';
import { nodeName } from '../../../server/core/names.ts';
import type { PlannedSend, PushPlan } from '../../../server/core/push/plan.ts';
import type { PushOutcome } from '../../../server/core/push/ports.ts';
import {
  outcomeOfRecord,
  type PushRecord,
  type PushRecordView,
  pushId,
} from '../../../server/core/push/records.ts';
import { ExitCode, exitCodeForStatus } from '../../common/exit-codes.ts';
import { type ApiClient, problemError } from '../../http/api-client.ts';
import { action, usage } from '../command-context.ts';
import { sayHeldBack } from '../held-back.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { nodesOn, pushOn } from './push-on.ts';
import { startRollout, type WaveOptions, waveBody, withWaveOptions } from './rollout.ts';

const maxRounds = z.coerce
  .number()
  .int()
  .min(1, 'max rounds is at least 1')
  .max(50, 'max rounds is at most 50');

type PushOptions = {
  behind: boolean;
  full: boolean;
  maxRounds: string;
  plan: boolean;
  wait: boolean;
  follow?: string;
  on?: string;
} & WaveOptions;

/** Registers `mesh push [NODE] [--behind] [--full] [--max-rounds N] [--plan] [--no-wait]`, `mesh push --on SELECTOR`, `mesh push --follow ID`. */
export function registerPushCommand(program: Command): void {
  withWaveOptions(program.command('push'))
    .description(
      'send NODE, then flush every other node that is behind, in bounded rounds; or --behind without a node',
    )
    .argument('[node]', 'the node to compose and send')
    .option('--behind', 'push every node that is behind', false)
    .option('--full', 'with --behind: recompose every node (the audit), not only the marked ones', false)
    .option('--max-rounds <n>', 'the bound on flush rounds', '5')
    .option('--plan', 'say what the push would send and change, and write nothing', false)
    .option('--no-wait', 'answer the push id at once, and let it run')
    .option('--follow <push>', 'follow a push started earlier, by its id, to its result')
    .option('--on <selector>', 'push each node whose labels match, e.g. role=web (docs/mesh-file.md)')
    .action(
      action(async ({ api, output }, rawNode: string | undefined, options: PushOptions) => {
        if (options.follow !== undefined) {
          const id = pushId.safeParse(options.follow);
          if (!id.success) return usage(output, id.error);
          return followPush(api, output, id.data);
        }
        if (options.waves !== undefined) return pushInWaves(api, output, rawNode, options);
        if (options.on !== undefined) {
          if (rawNode !== undefined || options.behind || options.full || options.plan) {
            const problem = 'picks the nodes itself: give no node, --behind, --full or --plan with it';
            output.say(cliLines.usage, { argument: '--on', problem });
            return ExitCode.usage;
          }
          const rounds = maxRounds.safeParse(options.maxRounds);
          if (!rounds.success) return usage(output, rounds.error);
          return pushOn(api, output, options.on, rounds.data);
        }
        const parsed = z
          .object({ node: nodeName.optional(), maxRounds })
          .refine((v) => v.node !== undefined || options.behind, 'name a node, or use --behind')
          .refine(() => !options.full || options.behind, '--full is an audit of --behind: use both')
          .safeParse({ node: rawNode, maxRounds: options.maxRounds });
        if (!parsed.success) return usage(output, parsed.error);
        const { node: n, maxRounds: rounds } = parsed.data;
        const request = {
          ...(n ? { node: n } : {}),
          ...(options.behind ? { behind: true } : {}),
          ...(options.full ? { full: true } : {}),
          maxRounds: rounds,
        };
        const what = n ? n : `every node that is behind${options.full ? ' (full audit)' : ''}`;
        if (options.plan) {
          output.say(cliLines.planning, { what });
          const plan = await api.call<PushPlan>('POST', '/push/plan', request);
          output.result(plan);
          printPlan(output, plan);
          return plan.behind.length > 0 ? ExitCode.stillBehind : ExitCode.ok;
        }
        output.say(cliLines.pushing, { what });
        const answer = await api.send('POST', '/push', { ...request, wait: options.wait });
        if (answer.status >= 400) throw problemError(answer);
        // A named node's relations that wait for an enrolment are said with what was sent.
        const finish = async (said: Output, outcome: PushOutcome) => {
          const waiting = n ? await waitingOf(api, n) : [];
          const exit = finished(said, { ...outcome, ...(waiting.length > 0 ? { waiting } : {}) });
          // The node asked for was left alone: what the operator asked was not done.
          return exit === ExitCode.ok && outcome.heldBack?.some((held) => held.node === n)
            ? ExitCode.heldBack
            : exit;
        };
        if (answer.status === 200) return finish(output, answer.body as PushOutcome);
        const { push } = answer.body as { push: string };
        if (!options.wait) {
          output.result({ push, state: 'running' });
          output.line(`push ${push} started; follow it with mesh push --follow ${push} (or see mesh pushes)`);
          return ExitCode.ok;
        }
        output.say(cliLines.following, { push });
        return followPush(api, output, push, 1000, finish);
      }),
    );
}

export function finished(
  output: Output,
  outcome: PushOutcome & { readonly waiting?: readonly Waiting[] },
): ExitCode {
  output.result({ ...outcome, heldBack: outcome.heldBack ?? [] });
  printOutcome(output, outcome);
  for (const w of outcome.waiting ?? [])
    output.line(
      `waiting: ${w.module} -> ${w.provider.node}/${w.provider.module} is not minted until ${w.waitingFor.join(' and ')} ${w.waitingFor.length > 1 ? 'enrol' : 'enrols'}; that enrolment delivers both sides`,
    );
  return outcome.behind.length > 0 ? ExitCode.stillBehind : ExitCode.ok;
}

type Waiting = Declaration['waiting'][number];

/** The node's relations that wait for an enrolment, as its last declaration names them. */
async function waitingOf(api: ApiClient, node: string): Promise<readonly Waiting[]> {
  const answer = await api.send('GET', `/nodes/${node}/declaration`);
  if (answer.status !== 200) return [];
  return ((answer.body as { declaration?: Partial<Declaration> }).declaration?.waiting ?? []).filter(
    (w) => w.heldBack === undefined,
  );
}

/**
 * Follows a push by its record until it is done, showing each round's progress, then prints
 * what `mesh push` prints for a push that answered at once. A failed push exits as its answer
 * would have.
 */
export async function followPush(
  api: ApiClient,
  output: Output,
  id: string,
  pollMs = 1000,
  finish: (output: Output, outcome: PushOutcome) => ExitCode | Promise<ExitCode> = finished,
): Promise<ExitCode> {
  let shown = '';
  for (;;) {
    const record = await api.call<PushRecordView>('GET', `/pushes/${id}`);
    if (record.state === 'done') {
      if (record.outcome !== 'failed') return finish(output, outcomeOfRecord(record as PushRecord));
      const message =
        record.errorMessage ?? `the push failed (${record.error}); the control plane logged why`;
      output.say(cliLines.pushFailed, { push: id, reason: message });
      output.result({ error: { code: 'push_failed', message, push: id, failed: record.error } });
      return failedPushExit(record.error);
    }
    if (record.state === 'unfinished') {
      output.say(cliLines.pushUnfinished, { push: id });
      return ExitCode.failed;
    }
    const progress = progressOf(record);
    const line = JSON.stringify(progress);
    if (line !== shown) output.say(cliLines.progress, progress);
    shown = line;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Said as `push ID: round 1 [########------------] 4,000 of 10,000 looked at, 3,950 flushed`. */
function progressOf(record: PushRecordView) {
  const progress = record.progress;
  return {
    push: record.id,
    round: progress?.round ?? null,
    checked: progress?.checked ?? 0,
    pending: progress?.pending ?? 0,
    flushed: progress ? progress.flushedCount + (progress.sentInRound ?? 0) : 0,
  };
}

/**
 * A failure the operator is told about exits as its answer would have (3 for an unknown node, 6
 * for "try again"), read from the row of what failed; one whose message stays in the log, 1.
 */
function failedPushExit(failed: string | null): ExitCode {
  const row = failed ? pushFailures.named(failed) : undefined;
  const status = row?.messageShown ? answeredStatus(row) : undefined;
  return status === undefined ? ExitCode.failed : exitCodeForStatus(status);
}

/** `mesh push NODE|--behind|--on SELECTOR --waves …`: a rollout (docs/decisions/rollouts-in-waves.md). */
async function pushInWaves(
  api: ApiClient,
  output: Output,
  rawNode: string | undefined,
  options: PushOptions,
) {
  const picks = [rawNode !== undefined, options.behind, options.on !== undefined].filter(Boolean).length;
  if (picks !== 1 || options.full || options.plan) {
    const problem = 'name a node, or --behind, or --on SELECTOR (no --full or --plan)';
    output.say(cliLines.usage, { argument: '--waves', problem });
    return ExitCode.usage;
  }
  const waves = waveBody(options);
  if (options.on === undefined)
    return startRollout(
      api,
      output,
      { ...(rawNode ? { node: rawNode } : { behind: true }), ...waves },
      options.wait,
    );
  const nodes = await nodesOn(api, options.on);
  if (nodes.length === 0) {
    output.line(`no node matches ${options.on}: nothing to roll out`);
    return ExitCode.ok;
  }
  return startRollout(api, output, { on: options.on, nodes, ...waves }, options.wait);
}

export function printOutcome(output: Output, outcome: PushOutcome) {
  if (outcome.pushed) output.line(`pushed ${outcome.pushed.node} at revision ${outcome.pushed.revision}`);
  for (const f of outcome.flushed)
    output.line(`flushed ${f.node} at revision ${f.revision} (round ${f.round})`);
  const unlisted = (outcome.flushedCount ?? outcome.flushed.length) - outcome.flushed.length;
  if (unlisted > 0)
    output.line(
      `… and ${unlisted.toLocaleString('en')} more flushed (its record lists the first ${outcome.flushed.length.toLocaleString('en')})`,
    );
  sayHeldBack(output, outcome);
  output.line(consistency(outcome, 'the mesh is'));
}

function printPlan(output: Output, plan: PushPlan) {
  const sends = [...(plan.pushed ? [plan.pushed] : []), ...plan.flushed];
  if (sends.length === 0) output.line('nothing is behind: nothing would be sent');
  for (const send of sends) {
    if (send.changes.length === 0) {
      output.line(`${send.node}: up to date at revision ${send.revision}; nothing to send`);
      continue;
    }
    output.line(`${send.node}: would be sent revision ${send.revision}${roundOf(send)}`);
    for (const change of send.changes) output.line(`  ${changeLine(change)}`);
  }
  sayHeldBack(output, plan);
  output.line(consistency(plan, 'the push would leave the mesh'));
}

const roundOf = (send: PlannedSend) => (send.round === 0 ? ' (named)' : ` (flushed in round ${send.round})`);

const sign = { added: '+', removed: '-', changed: '~' } as const;
const changeLine = (change: DeclarationChange) =>
  `${sign[change.change]} ${change.section} ${change.item}${change.detail ? `: ${change.detail}` : ''}`;

/**
 * The closing lines: consistent, or which nodes are still behind and what to do; a node that
 * cannot be sent is named with its reason, since another push would not send it either.
 */
function consistency(
  outcome: Pick<
    PushOutcome,
    'behind' | 'rounds' | 'unsendable' | 'flushedCount' | 'heldBack' | 'heldBackCount'
  > & {
    flushed: readonly unknown[];
  },
  what: string,
) {
  const rounds = `${outcome.rounds} round${outcome.rounds === 1 ? '' : 's'}`;
  const flushed = outcome.flushedCount ?? outcome.flushed.length;
  const held = outcome.heldBackCount ?? outcome.heldBack?.length ?? 0;
  const apart = held > 0 ? ` apart from ${held} held-back node${held === 1 ? '' : 's'}` : '';
  if (outcome.behind.length === 0) return `${what} consistent${apart} (${flushed} flushed in ${rounds})`;
  const unsendable = outcome.unsendable ?? [];
  const cannot = new Set(unsendable.map((entry) => entry.node));
  const waiting = outcome.behind.filter((node) => !cannot.has(node));
  return [
    ...unsendable.map((entry) => `${entry.node} NOT sent: ${entry.reason}`),
    waiting.length > 0
      ? `${what} NOT consistent: ${waiting.join(', ')} still behind after ${rounds}; run mesh push --behind again, or raise --max-rounds`
      : `${what} NOT consistent: ${[...cannot].join(', ')} cannot be sent until changed; every other node was sent`,
  ].join('\n');
}
