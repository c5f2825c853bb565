import {
  type ApplyJob,
  ApplyJobRaceError,
  ApplyJobRunningError,
  type RunningApplyJob,
} from '../../lib/server/core/mesh-file/apply-job.ts';
import type { ApplyPlan } from '../../lib/server/core/mesh-file/plan.ts';
import type { ApplyJobStore, ApplyLedger, LedgerRemoval } from '../../lib/server/core/mesh-file/ports.ts';

/** ApplyJobStore in memory, with the conditions of lib/server/adapters/mesh-file/apply-jobs.ts. */
export class MemoryApplyJobs implements ApplyJobStore {
  readonly jobs = new Map<string, { job: ApplyJob; file: string }>();
  holder: RunningApplyJob | undefined;
  /** Each job's ledger: its transactions (as a writer would put them), and its removals by key. */
  readonly ledgers = new Map<
    string,
    { transactions: Array<{ nodes: string[]; items: number }>; removals: Map<string, LedgerRemoval> }
  >();

  /** Each job's kept plan, slice by slice, as JSON (what the table keeps, gzipped). */
  readonly plans = new Map<string, string[]>();

  async keepPlan(id: string, slices: readonly ApplyPlan[]): Promise<void> {
    this.plans.set(
      id,
      slices.map((slice) => JSON.stringify(slice)),
    );
  }

  async slice(id: string, index: number): Promise<ApplyPlan> {
    const kept = this.plans.get(id)?.[index];
    if (kept === undefined) throw new Error(`no slice ${index} of ${id}`);
    return JSON.parse(kept) as ApplyPlan;
  }

  ledgerOf(id: string) {
    let ledger = this.ledgers.get(id);
    if (!ledger) {
      ledger = { transactions: [], removals: new Map() };
      this.ledgers.set(id, ledger);
    }
    return ledger;
  }

  async ledger(id: string): Promise<ApplyLedger> {
    const { transactions, removals } = this.ledgerOf(id);
    const touched = new Set(transactions.flatMap((tx) => tx.nodes));
    const removed = { relations: 0, modules: 0, nodes: 0 };
    for (const removal of removals.values()) {
      touched.add(removal.kind === 'relation' ? removal.consumerNode : removal.node);
      if (removal.kind === 'relation') removed.relations += 1;
      else if (removal.kind === 'module') removed.modules += 1;
      else {
        removed.nodes += 1;
        removed.modules += removal.modules;
      }
    }
    return {
      written: {
        transactions: transactions.length,
        items: transactions.reduce((sum, tx) => sum + tx.items, 0),
      },
      removed,
      touched: touched.size,
    };
  }

  async noteRemoval(id: string, removal: LedgerRemoval): Promise<void> {
    this.ledgerOf(id).removals.set(JSON.stringify(removal), removal);
  }

  async forgetRemoval(id: string, removal: LedgerRemoval): Promise<void> {
    this.ledgerOf(id).removals.delete(JSON.stringify(removal));
  }

  async running(): Promise<RunningApplyJob | undefined> {
    return this.holder;
  }

  async start(job: ApplyJob, file: string, takingOver?: RunningApplyJob): Promise<void> {
    const held = this.holder;
    if (held && (held.id !== takingOver?.id || held.heardAt !== takingOver.heardAt))
      throw new ApplyJobRunningError(held.id);
    if (takingOver) {
      const old = this.jobs.get(takingOver.id);
      if (old?.job.state === 'running')
        old.job = {
          ...old.job,
          state: 'failed',
          error: { status: 409, code: 'apply_job_abandoned', message: 'abandoned' },
        };
    }
    this.jobs.set(job.id, { job, file });
    this.holder = { id: job.id, heardAt: job.updatedAt };
  }

  async read(id: string): Promise<ApplyJob | undefined> {
    return this.jobs.get(id)?.job;
  }

  async load(id: string): Promise<{ job: ApplyJob; file: string } | undefined> {
    const kept = this.jobs.get(id);
    return kept ? { ...kept } : undefined;
  }

  async record(next: ApplyJob, seenParts: number): Promise<void> {
    const kept = this.jobs.get(next.id);
    if (kept?.job.state !== 'running' || kept.job.parts !== seenParts || this.holder?.id !== next.id)
      throw new ApplyJobRaceError(next.id);
    kept.job = next;
    this.holder = next.state === 'running' ? { id: next.id, heardAt: next.updatedAt } : undefined;
  }
}
