import { readFileSync } from 'node:fs';
import { type ApplyPlan, whatMoved } from '../../core/mesh-file/index.ts';
import type { BoundedApplyOutcome } from '../../core/mesh-file/pages.ts';
import { type ApiClient, problemError } from '../api-client.ts';
import { ExitCode } from '../exit-codes.ts';
import { cliLines } from '../lines.ts';
import type { Output } from '../output.ts';
import { type ApplyOptions, answered, bodyOf } from './mesh-file.ts';
import { planPages } from './mesh-file-pages.ts';

/** A plan saved by `mesh apply --plan --json`, or an exit code when it cannot be read. */
function savedPlan(output: Output, path: string): ApplyPlan | ExitCode {
  try {
    const plan = JSON.parse(readFileSync(path, 'utf8')) as ApplyPlan;
    if (typeof plan?.revision !== 'string' || typeof plan.digest !== 'string' || !plan.add || !plan.drift)
      throw new Error('not a plan printed by mesh apply --plan --json');
    return plan;
  } catch (error) {
    output.say(cliLines.fileUnreadable, { file: path, reason: (error as Error).message });
    return ExitCode.usage;
  }
}

/**
 * Applies in as many requests as it takes: each applies what fits its time and says whether it
 * is complete, which nodes it wrote and which remain; the next plans the rest again from the
 * mesh as it is (a saved plan's revision holds for the first only, since the first moves the
 * mesh on). A saved plan refused as stale is compared with a plan of the file now, to say what
 * moved in between.
 */
export async function applyAll(
  api: ApiClient,
  output: Output,
  options: ApplyOptions,
): Promise<BoundedApplyOutcome | ExitCode> {
  const body = bodyOf(output, options);
  if (typeof body === 'number') return body;
  const saved = options.fromPlan === undefined ? undefined : savedPlan(output, options.fromPlan);
  if (typeof saved === 'number') return saved;
  const revision = saved?.revision ?? options.revision;
  const digest = saved?.digest ?? options.digest;
  const total = { transactions: 0, items: 0, relations: 0, modules: 0, nodes: 0, touched: 0 };
  let first: BoundedApplyOutcome | undefined;
  for (let request = 1; ; request++) {
    const held = request === 1 ? { ...(revision ? { revision } : {}), ...(digest ? { digest } : {}) } : {};
    const answer = await api.send('POST', '/mesh/apply', { ...body, ...held });
    const code = (answer.body as { error?: { code?: string } } | undefined)?.error?.code;
    if (answer.status === 409 && code === 'stale_plan' && saved) {
      const now = await planPages(api, output, options, body);
      if (typeof now !== 'number') {
        const moved = whatMoved(saved, now);
        output.say(cliLines.applyMoved, { from: saved.revision, to: now.revision, moved });
      }
      throw problemError(answer);
    }
    const outcome = answered<BoundedApplyOutcome>(output, options, answer);
    if (typeof outcome === 'number') return outcome;
    first ??= outcome;
    total.transactions += outcome.written.transactions;
    total.items += outcome.written.items;
    total.relations += outcome.removed.relations;
    total.modules += outcome.removed.modules;
    total.nodes += outcome.removed.nodes;
    total.touched += outcome.progress.touched;
    if (outcome.complete) {
      // What the first plan said is what was applied; the counts are every request's.
      return {
        plan: first.plan,
        planCounts: first.planCounts,
        planCut: first.planCut,
        complete: true,
        removed: { relations: total.relations, modules: total.modules, nodes: total.nodes },
        written: { transactions: total.transactions, items: total.items },
        progress: { ...outcome.progress, touched: total.touched },
      };
    }
    output.say(cliLines.applyProgress, {
      part: request,
      items: total.items,
      transactions: total.transactions,
      touched: total.touched,
      touchedNodes: outcome.progress.touchedNodes,
      remaining: outcome.progress.remaining,
      remainingNodes: outcome.progress.remainingNodes,
    });
  }
}
