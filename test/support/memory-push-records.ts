import type { PushRecord, PushRecordReader, PushRecordWriter } from '../../lib/server/core/push/records.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';

/** Keeps push records as the table does: by id, a start refused when one is kept, a finish over it. */
export class MemoryPushRecords implements PushRecordWriter, PushRecordReader {
  readonly kept = new Map<string, PushRecord>();
  /** Every progress note, in order, for the push it was about. */
  readonly notes: Array<{ id: string; progress: NonNullable<PushRecord['progress']> }> = [];
  /** Every batch counted in, in order. */
  readonly batches: Array<{ id: string; checked: number; sent: number }> = [];
  down = false;

  async start(record: PushRecord) {
    if (this.down) throw new StoreUnavailableError('the inventory table');
    if (this.kept.has(record.id)) throw new Error(`push ${record.id} is already recorded`);
    this.kept.set(record.id, record);
  }

  async finish(record: PushRecord) {
    if (this.down) throw new StoreUnavailableError('the inventory table');
    this.kept.set(record.id, record);
  }

  async progress(id: string, progress: NonNullable<PushRecord['progress']>) {
    this.notes.push({ id, progress });
    const record = this.kept.get(id);
    if (record?.state === 'running') this.kept.set(id, { ...record, progress });
  }

  async batchDone(id: string, done: { readonly checked: number; readonly sent: number }) {
    this.batches.push({ id, ...done });
    const record = this.kept.get(id);
    if (record?.state !== 'running' || !record.progress) return;
    const { progress } = record;
    this.kept.set(id, {
      ...record,
      progress: {
        ...progress,
        checked: (progress.checked ?? 0) + done.checked,
        sentInRound: (progress.sentInRound ?? 0) + done.sent,
      },
    });
  }

  async handedOn(id: string, at: Date) {
    const record = this.kept.get(id);
    if (record?.state === 'running')
      this.kept.set(id, {
        ...record,
        handedOnAt: at.toISOString(),
        handOvers: (record.handOvers ?? 0) + 1,
      });
  }

  async list(limit: number) {
    return [...this.kept.values()].sort((a, b) => b.id.localeCompare(a.id)).slice(0, limit);
  }

  async read(id: string) {
    return this.kept.get(id);
  }
}
