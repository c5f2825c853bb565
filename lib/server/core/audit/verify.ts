import { type AuditRecord, type ChainHead, chainStart, hashOf } from './record.ts';

/**
 * What `mesh audit verify` found wrong with one chain, naming the record. `hidden`: a record
 * `mesh audit` cannot list (its index keys are not those of its time and place), or a chain verify
 * would not have walked (its records are listed by day, and it is not in the list of chains).
 */
export type ChainFinding = {
  readonly subject: string;
  /** The record's place on its chain (its sort key), or the first of a run removed. */
  readonly seq: number;
  readonly problem: 'removed' | 'altered' | 'reordered' | 'hidden';
  readonly says: string;
};

/**
 * Checks one chain record by record in the order of its places, keeping only the record before:
 * memory stays the same however long the chain. A record is
 * - `reordered` when the place it is kept at is not the seq it was hashed with;
 * - `altered` when its hash is not the hash of what it holds, or its successor chained another;
 * - `removed` when places are missing, before the head's last or between two records, unless
 *   the TTL explains it: the record after a gap names when the one before it expired;
 * - and the head, whose fields are outside every hash, is checked against the records kept: its
 *   place and hash against the last, and the expiry it says of the last against the last kept's
 *   own (a chain's records expire oldest first, record.ts), so records taken off its end cannot
 *   be passed off as expired by editing the head's expiry.
 */
export class ChainCheck {
  readonly #subject: string;
  readonly #head: ChainHead | undefined;
  readonly #nowSeconds: number;
  #previous: { readonly place: number; readonly record: AuditRecord } | undefined;
  #records = 0;

  constructor(subject: string, head: ChainHead | undefined, nowSeconds: number) {
    this.#subject = subject;
    this.#head = head;
    this.#nowSeconds = nowSeconds;
  }

  get records(): number {
    return this.#records;
  }

  /** The record kept at `place`; places come in ascending order. */
  add(place: number, record: AuditRecord): ChainFinding[] {
    const found: ChainFinding[] = [];
    const finding = (seq: number, problem: ChainFinding['problem'], says: string) =>
      found.push({ subject: this.#subject, seq, problem, says });
    this.#records += 1;
    const previous = this.#previous;
    const expectedPlace = (previous?.place ?? 0) + 1;
    const expired = record.prevExpiresAt !== undefined && record.prevExpiresAt <= this.#nowSeconds;
    if (record.seq !== place)
      finding(place, 'reordered', `the record kept at ${place} was written as ${record.seq}`);
    if (hashOf(record) !== record.hash)
      finding(place, 'altered', 'its hash is not the hash of what it holds');
    if (place > expectedPlace && !expired)
      finding(expectedPlace, 'removed', `records ${expectedPlace} to ${place - 1} are missing`);
    else if (place === expectedPlace) {
      const chained = previous?.record.hash ?? chainStart;
      // A record out of its place is named reordered already: its successor's link says no more.
      const inPlace =
        record.seq === place && (previous === undefined || previous.record.seq === previous.place);
      if (record.prevHash !== chained && inPlace)
        finding(place - 1, 'altered', `record ${place} chained another hash than record ${place - 1} holds`);
    }
    this.#previous = { place, record };
    return found;
  }

  /** What the head says against the last record seen. */
  end(): ChainFinding[] {
    const last = this.#previous;
    const head = this.#head;
    const finding = (seq: number, problem: ChainFinding['problem'], says: string): ChainFinding[] => [
      { subject: this.#subject, seq, problem, says },
    ];
    if (!head) return last ? finding(last.place, 'removed', 'the chain has records and no head') : [];
    if (last && head.expiresAt !== undefined && head.expiresAt < last.record.expiresAt)
      return finding(
        last.place,
        'altered',
        `the head says its last record expires at ${head.expiresAt}, before record ${last.place}, written before it, does (${last.record.expiresAt}): the head was edited`,
      );
    const allExpired = head.expiresAt !== undefined && head.expiresAt <= this.#nowSeconds;
    const lastPlace = last?.place ?? 0;
    if (head.seq > lastPlace && !allExpired)
      return finding(lastPlace + 1, 'removed', `records ${lastPlace + 1} to ${head.seq} are missing`);
    if (last && head.seq < lastPlace)
      return finding(head.seq + 1, 'altered', `the head says ${head.seq} records, ${lastPlace} are kept`);
    if (last && head.seq === lastPlace && head.hash !== last.record.hash)
      return finding(lastPlace, 'altered', 'the head chained another hash than the last record holds');
    return [];
  }
}
