import type { Command } from 'commander';
import * as z from 'zod';
import { joinListPages } from '../../../server/core/answer-pages.ts';
import type { RolloutAnswer } from '../../../server/core/rollout/pages.ts';
import type { RolloutPage, RolloutSummary } from '../../../server/core/rollout/ports.ts';
import { describeOrigin, rolloutIdPattern } from '../../../server/core/rollout/service.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { type ApiClient, ApiProblemError } from '../../http/api-client.ts';
import { action, usage } from '../command-context.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { checkedInterval, watching } from '../watch.ts';
import { headerOf, refuseIfRefused, sayClaims, untilClaimed } from './rollout-claims.ts';

/** How often a followed rollout is read again. */
const followMs = 1_000;
/** How long an upgrade's rollout may take to be started by the consumer before following gives up. */
const startPatienceMs = 60_000;
/** The longest wait between reads of a rollout not started yet: about 10 reads in the patience above. */
const maxMissingMs = 8_000;

const rolloutId = z.string().regex(rolloutIdPattern, 'a rollout id looks like 20260722T101500123Z-4f2a9c');

/** `--waves`, `--max-failures`, `--wave-timeout`, `--pause`, `--auto-undo`, as `mesh push` and `mesh upgrade` take them. */
export type WaveOptions = {
  waves?: string;
  maxFailures?: string;
  waveTimeout?: string;
  pause: boolean;
  autoUndo: boolean;
  wait: boolean;
};

export function withWaveOptions(command: Command): Command {
  return command
    .option('--waves <sizes>', 'send in waves, e.g. 1,10%,100%: each a count or a percentage, cumulative')
    .option('--max-failures <n>', 'with --waves: halt when more nodes fail than this (N or P%)', undefined)
    .option(
      '--wave-timeout <d>',
      'with --waves: how long a wave waits for its nodes (90s, 10m, 1h)',
      undefined,
    )
    .option('--pause', 'with --waves: stop after each wave until mesh rollout resume', false)
    .option(
      '--auto-undo',
      'with --waves on an upgrade: when it halts, take it back (mesh rollout undo) at once',
      false,
    );
}

export const waveBody = (options: WaveOptions) => ({
  waves: options.waves,
  ...(options.maxFailures !== undefined ? { maxFailures: options.maxFailures } : {}),
  ...(options.waveTimeout !== undefined ? { waveTimeout: options.waveTimeout } : {}),
  ...(options.pause ? { pause: true } : {}),
  ...(options.autoUndo ? { autoUndo: true } : {}),
});

/**
 * POST /rollouts, then the rollout followed to its end (or, with --no-wait, until its nodes are
 * claimed: an overlap is still refused as a start was, 409 `rollout_overlap`).
 */
export async function startRollout(
  api: ApiClient,
  output: Output,
  body: object,
  wait: boolean,
): Promise<ExitCode> {
  const record = await api.call<RolloutAnswer>('POST', '/rollouts', body);
  if (wait) return followRollout(api, output, record.id);
  return answerId(output, await untilClaimed(api, output, record.id));
}

/** A page of a rollout as `GET /rollouts/{id}` answers it. */
type ShownPage = RolloutAnswer & { readonly summary: RolloutSummary; readonly next?: string };

const nodesOf = (record: RolloutAnswer) => record.waves.reduce((sum, w) => sum + w.size, 0);
const notSentOf = (record: RolloutAnswer) =>
  record.waves.slice(record.current + 1).reduce((sum, w) => sum + w.size, 0);
/** How many times a read of every page starts again when a wave was sent meanwhile. */
const pagingTries = 5;

/** Every page of the rollout, joined: the record whole, as the API answered it before pages. */
export async function readWhole(api: ApiClient, id: string): Promise<ShownPage> {
  for (let tries = 1; ; tries += 1) {
    try {
      const pages: ShownPage[] = [];
      let cursor: string | undefined;
      do {
        const page: ShownPage = await api.call<ShownPage>(
          'GET',
          `/rollouts/${id}${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        pages.push(page);
        cursor = page.next;
      } while (cursor);
      const [first] = pages;
      const paths = (first?.waves ?? []).map((_, index) => ['waves', String(index), 'nodes']);
      const { next: _next, ...whole } = joinListPages(pages, paths);
      return whole;
    } catch (error) {
      if (!(error instanceof ApiProblemError && error.code === 'rollout_moved') || tries === pagingTries)
        throw error;
    }
  }
}

function answerId(output: Output, record: RolloutAnswer): ExitCode {
  output.result(record);
  output.line(`rollout ${record.id} started; mesh rollout show ${record.id} says how far it came`);
  return ExitCode.ok;
}

/**
 * Reads the rollout until it is no longer running, saying each wave as it is sent and again as
 * its nodes answer, the failed nodes with their last step, then how it ended; the exit says how.
 */
export async function followRollout(api: ApiClient, output: Output, id: string): Promise<ExitCode> {
  const since = Date.now();
  let said = '';
  let started = false;
  let wave: number | undefined;
  let claimed = -1;
  let missing = 0;
  for (;;) {
    // before a wave is in flight the header says all there is: its counts, its claims
    let record = await readOrWait(api, id, since, wave ?? 'header');
    if (!record) {
      // not started yet (an upgrade's rollout waits for the queue's consumer): each read of a
      // rollout not found is a refusal the audit trail counts, so they thin out
      missing += 1;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(followMs * 2 ** (missing - 1), maxMissingMs)),
      );
      continue;
    }
    refuseIfRefused(record);
    if (record && !started) {
      started = true;
      output.say(cliLines.rolloutStarted, {
        rollout: id,
        what: describeOrigin(record.origin),
        waves: record.waves.length,
        nodes: nodesOf(record),
      });
    }
    if (record) claimed = sayClaims(output, record, claimed);
    if (record?.state === 'claiming') {
      await new Promise((resolve) => setTimeout(resolve, followMs));
      continue;
    }
    // the wave in flight, read on its own page: its nodes' names start the line
    if (record && record.current >= 0 && record.current !== wave) {
      wave = record.current;
      record = await readOrWait(api, id, since, wave);
    }
    if (record && record.current >= 0 && record.current === wave) {
      const current = record.waves[record.current];
      const counts = { ...(current?.counts ?? {}) };
      const line = JSON.stringify([record.current, counts]);
      if (line !== said) {
        said = line;
        output.say(cliLines.rolloutWave, {
          rollout: id,
          wave: record.current + 1,
          of: record.waves.length,
          nodes: (current?.nodes ?? []).map((n) => n.node),
          counts,
          remaining: notSentOf(record),
        });
      }
    }
    if (record && record.state !== 'running') return ended(output, await readWhole(api, id));
    await new Promise((resolve) => setTimeout(resolve, followMs));
  }
}

async function readOrWait(
  api: ApiClient,
  id: string,
  since: number,
  wave: number | 'header' | undefined,
): Promise<RolloutAnswer | undefined> {
  try {
    if (wave === 'header') return await headerOf(api, id);
    return await api.call<RolloutAnswer>(
      'GET',
      `/rollouts/${id}${wave === undefined ? '' : `?wave=${wave}`}`,
    );
  } catch (error) {
    // an upgrade's rollout is started by the queue's consumer: until then it is not found
    if (error instanceof ApiProblemError && error.status === 404 && Date.now() - since < startPatienceMs)
      return undefined;
    throw error;
  }
}

const exitOf = {
  done: ExitCode.ok,
  halted: ExitCode.rolloutHalted,
  paused: ExitCode.rolloutPaused,
  aborted: ExitCode.rolloutAborted,
  undone: ExitCode.rolloutUndone,
} as const;

function ended(output: Output, record: ShownPage): ExitCode {
  for (const wave of record.waves)
    for (const n of wave.nodes)
      if (n.state === 'failed' || n.state === 'timed-out')
        output.say(cliLines.rolloutFailedNode, {
          rollout: record.id,
          node: n.node,
          state: n.state,
          step: n.step ?? '',
        });
  output.say(cliLines.rolloutEnded, {
    rollout: record.id,
    state: record.state,
    ...(record.reason ? { reason: record.reason } : {}),
    notSent: notSentOf(record),
  });
  output.result(record);
  return exitOf[record.state as keyof typeof exitOf] ?? ExitCode.failed;
}

/** Where a wave stands: sent when, or not sent and why. */
function waveText(record: ShownPage, index: number): string {
  const wave = record.waves[index];
  if (index <= record.current) return `sent ${wave?.sentAt ?? ''}`;
  if (record.state === 'halted' || record.state === 'paused')
    return `not sent: held back while the rollout is ${record.state}`;
  if (record.state === 'running' || record.state === 'claiming') return 'not sent yet';
  return `never sent: the rollout is ${record.state}`;
}

/** What the nodes of unsent waves wait for, and the commands that release them. */
function heldText(record: ShownPage): string | undefined {
  const count = notSentOf(record);
  if (count === 0 || (record.state !== 'halted' && record.state !== 'paused')) return undefined;
  const undo =
    record.origin.kind === 'upgrade' || record.origin.kind === 'agent'
      ? `, mesh rollout undo ${record.id} takes the upgrade back`
      : '';
  return `${count} node${count === 1 ? '' : 's'} in waves not sent ${count === 1 ? 'is' : 'are'} held back: nothing sends them the change until mesh rollout resume ${record.id}${undo}, or mesh rollout abort ${record.id} (refused while the change would get out)`;
}

/** `mesh rollout list|show|resume|abort|undo`. */
export function registerRolloutCommands(program: Command): void {
  const rollout = program.command('rollout').description('rollouts in waves: list, show, resume, abort');
  rollout
    .command('list')
    .description('the rollouts, newest first')
    .option('--limit <n>', 'how many', '20')
    .option('--cursor <id>', 'the page after this rollout')
    .action(
      action(async ({ api, output }, options: { limit: string; cursor?: string }) => {
        const query = new URLSearchParams({
          limit: options.limit,
          ...(options.cursor ? { cursor: options.cursor } : {}),
        });
        const page = await api.call<RolloutPage & { next?: string }>('GET', `/rollouts?${query}`);
        for (const r of page.rollouts) {
          const counts = Object.entries(r.counts)
            .map(([state, count]) => `${count} ${state}`)
            .join(', ');
          const claims = r.claims ? ` (${r.claims.claimed}/${r.claims.total} claimed)` : '';
          output.line(
            `${r.id} ${r.state}${claims} ${describeOrigin(r.origin)}: wave ${r.wave}/${r.waves}, ${counts}${r.reason ? ` (${r.reason})` : ''}`,
          );
        }
        if (page.next) output.line(`more: mesh rollout list --cursor ${page.next}`);
        output.result(page);
        return ExitCode.ok;
      }),
    );
  rollout
    .command('show')
    .argument('<id>', 'the rollout')
    .description('every wave and node: applied, failed (with its last step), waiting, offline, timed out')
    .option('--watch', 'print it again every --interval until the rollout ends, then exit as it ended')
    .option('--interval <duration>', 'with --watch: how often, 1s to 60m', '2s')
    .action(
      action(async ({ api, output }, raw: string, options: { watch?: boolean; interval: string }) => {
        const id = rolloutId.safeParse(raw);
        if (!id.success) return usage(output, id.error);
        if (!options.watch) return (await showRollout(api, output, id.data)).exit;
        const every = checkedInterval(options.interval);
        if (typeof every !== 'number') {
          output.say(cliLines.usage, every);
          return ExitCode.usage;
        }
        return watching(output, `mesh rollout show ${id.data}`, every, async () => {
          const { exit, state } = await showRollout(api, output, id.data);
          return { done: state !== 'running' && state !== 'claiming', exit };
        });
      }),
    );
  rollout
    .command('undo')
    .argument('<id>', 'the rollout (an upgrade, or an agent upgrade)')
    .description(
      'take an upgrade back: its version set back (for an agent upgrade, each host to the version it ran before), the nodes it changed sent what they had before, in its waves; followed to its end unless --no-wait',
    )
    .option('--no-wait', 'answer the undo rollout at once')
    .action(
      action(async ({ api, output }, raw: string, options: { wait: boolean }) => {
        const id = rolloutId.safeParse(raw);
        if (!id.success) return usage(output, id.error);
        const asked = await api.call<{ rollout: string; undoes: string }>(
          'POST',
          `/rollouts/${id.data}/undo`,
          {},
        );
        output.line(`rollout ${asked.rollout} takes rollout ${asked.undoes} back`);
        if (options.wait) return followRollout(api, output, asked.rollout);
        output.result(asked);
        return ExitCode.ok;
      }),
    );
  for (const [verb, what] of [
    ['resume', 'a paused or halted rollout goes on; followed to its end unless --no-wait'],
    [
      'abort',
      'stop a rollout: nothing more is sent; refused while a node it never sent is behind (the change would get out)',
    ],
  ] as const)
    rollout
      .command(verb)
      .argument('<id>', 'the rollout')
      .description(what)
      .option('--no-wait', 'answer at once')
      .action(
        action(async ({ api, output }, raw: string, options: { wait: boolean }) => {
          const id = rolloutId.safeParse(raw);
          if (!id.success) return usage(output, id.error);
          const record = await api.call<RolloutAnswer>('POST', `/rollouts/${id.data}/${verb}`, {});
          if (verb === 'resume' && options.wait) return followRollout(api, output, record.id);
          const left = notSentOf(record);
          output.line(
            verb === 'abort' && left > 0
              ? `rollout ${record.id} aborted: nothing more is sent; the ${left} node${left === 1 ? '' : 's'} it never sent keep what they have${record.origin.kind === 'upgrade' ? ` (an upgrade sets a wave's version only as it sends it)` : ', and none is behind: no push sends them its change'}`
              : `rollout ${record.id} ${record.state}`,
          );
          output.result(record);
          return ExitCode.ok;
        }),
      );
}

/** `mesh rollout show ID` once: every wave and node, and the exit its state says. */
async function showRollout(api: ApiClient, output: Output, id: string) {
  const record = await readWhole(api, id);
  output.line(
    `rollout ${record.id}: ${describeOrigin(record.origin)}, ${record.state}${record.reason ? `: ${record.reason}` : ''}`,
  );
  if (record.state === 'claiming' && record.claims)
    output.line(`claiming its nodes: ${record.claims.claimed}/${record.claims.total} claimed`);
  if (record.releasing && record.releasing.released < record.releasing.upto)
    output.line(`letting go of its claims: ${record.releasing.released}/${record.releasing.upto}`);
  record.waves.forEach((wave, index) => {
    output.line(`wave ${index + 1}/${record.waves.length} (${waveText(record, index)}):`);
    for (const n of wave.nodes)
      output.line(
        `  ${n.node} ${n.state}${n.revision !== undefined ? ` revision ${n.revision}` : ''}${n.step ? ` (${n.step})` : ''}${n.paired ? ' [paired]' : ''}`,
      );
  });
  const held = heldText(record);
  if (held) output.line(held);
  if (record.turnedUnhealthy?.length) output.line('turned unhealthy after their wave (failures):');
  for (const n of record.turnedUnhealthy ?? []) output.line(`  ${n.node} (${n.step ?? 'unhealthy'})`);
  output.result(record);
  const exit =
    record.state === 'refused'
      ? ExitCode.refused
      : record.state === 'running' || record.state === 'done' || record.state === 'claiming'
        ? ExitCode.ok
        : exitOf[record.state];
  return { exit, state: record.state };
}
