import type { HostRequests } from '../../lib/clients/host/agent/http-control-plane.ts';
import type { HostReport } from '../../lib/clients/host/agent/ports.ts';
import type { ApiAnswer } from '../../lib/clients/http/api-client.ts';
import { consumerLines } from '../../lib/server/core/control/log-lines.ts';

/** One report a host made, and what came of sending it. */
export type LedgerEntry = {
  readonly node: string;
  readonly sequence: number;
  readonly state: HostReport['state'];
  readonly madeAt: number;
  attempts: number;
  /** Answered 202: the control plane put it on the queue. */
  accepted: boolean;
  /** The queue message ids the answers named (a resend deduplicated names the same one). */
  readonly messageIds: Set<string>;
};

export const reportKey = (node: string, sequence: number) => `${node} ${sequence}`;

/**
 * Every report the hosts made, noted where the real agent hands it to its requests (so nothing
 * the agent does is changed): each attempt, and the queue message id of a 202.
 */
export class ReportLedger {
  readonly entries = new Map<string, LedgerEntry>();

  /** A node's requests, with every report it sends noted. */
  wrap(node: string, inner: HostRequests): HostRequests {
    return {
      send: async (method, path, body, headers) => {
        const report = method === 'POST' && path.endsWith('/reports') ? (body as HostReport) : undefined;
        if (!report) return inner.send(method, path, body, headers);
        const key = reportKey(node, report.sequence);
        const entry = this.entries.get(key) ?? {
          node,
          sequence: report.sequence,
          state: report.state,
          madeAt: Date.now(),
          attempts: 0,
          accepted: false,
          messageIds: new Set<string>(),
        };
        this.entries.set(key, entry);
        entry.attempts += 1;
        const answer: ApiAnswer = await inner.send(method, path, body, headers);
        if (answer.status === 202) {
          entry.accepted = true;
          const messageId = (answer.body as { queued?: { messageId?: string } } | undefined)?.queued
            ?.messageId;
          if (messageId) entry.messageIds.add(messageId);
        }
        return answer;
      },
    };
  }

  clear(): void {
    this.entries.clear();
  }
}

/** What the control plane said it did with reports: its log lines (by code), and the dead-letter queue's copies. */
export type Evidence = {
  /** `node sequence` of every report's `control.settled` line: recorded. */
  readonly recorded: Set<string>;
  /** `node sequence` of every `control.superseded` line: not newer than the one recorded. */
  readonly stale: Set<string>;
  /** Message ids of every report's `control.set-aside` line. */
  readonly setAside: Set<string>;
  /** Message ids of every report's `control.lost` line. */
  readonly lostLines: Set<string>;
  /** Message ids of every report's `control.held` line: the store could not take them then. */
  readonly held: Set<string>;
  /** Dead-letter copies: the original message id to its report and kind. */
  readonly deadLetters: Map<string, { readonly key: string; readonly kind: string }>;
  /** Message ids settled more than once (a batch cut short by a kill comes back). */
  readonly settledAgain: Set<string>;
  /** The highest recorded sequence of each node. */
  readonly highestRecorded: Map<string, number>;
};

export const emptyEvidence = (): Evidence => ({
  recorded: new Set(),
  stale: new Set(),
  setAside: new Set(),
  lostLines: new Set(),
  held: new Set(),
  deadLetters: new Map(),
  settledAgain: new Set(),
  highestRecorded: new Map(),
});

/** Reads the consumer's lines (Powertools JSON, one object a line) into the evidence, by their codes. */
export function readConsumerLines(output: string, evidence: Evidence, settled: Set<string>): void {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { code?: string; type?: string; node?: string; sequence?: number; messageId?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    const id = entry.messageId;
    const ofReport = entry.type === 'report';
    const { node, sequence } = entry;
    if (!ofReport) continue;
    if (entry.code === consumerLines.settled.code && node && sequence !== undefined) {
      evidence.recorded.add(reportKey(node, sequence));
      evidence.highestRecorded.set(node, Math.max(evidence.highestRecorded.get(node) ?? 0, sequence));
    } else if (entry.code === consumerLines.superseded.code && node && sequence !== undefined)
      evidence.stale.add(reportKey(node, sequence));
    else if (id && entry.code === consumerLines.setAside.code) evidence.setAside.add(id);
    else if (id && entry.code === consumerLines.lost.code) evidence.lostLines.add(id);
    else {
      if (id && (entry.code === consumerLines.held.code || entry.code === consumerLines.heldNotCopied.code))
        evidence.held.add(id);
      continue;
    }
    if (id) {
      if (settled.has(id)) evidence.settledAgain.add(id);
      settled.add(id);
    }
  }
}

/** One scenario's reports, each counted once. */
export type Accounting = {
  /** Made by a host. */
  made: number;
  /** Reached the queue: answered 202, or seen by the consumer. */
  sent: number;
  recorded: number;
  /** Set aside or found stale by the consumer: a newer report of its node covers it. */
  superseded: number;
  /** Let go past the hold bound, with its `lost` line and its dead-letter copy. */
  lostWithLine: number;
  /** Sent, and then nothing: no record, no line, no copy (goal 0). */
  silent: number;
  /** Of the sent, how many were held at least once (the store could not take them). */
  held: number;
  /** Never taken (told try again, or nothing answered), then replaced by a newer report at the host. */
  replacedAtHost: number;
  /** Never taken, and still waiting to be sent when the hosts were stopped. */
  waitingAtStop: number;
  readonly silentReports: string[];
};

/** Each report of the ledger, by what the evidence says became of it. */
export function account(ledger: ReportLedger, evidence: Evidence): Accounting {
  const row: Accounting = {
    made: 0,
    sent: 0,
    recorded: 0,
    superseded: 0,
    lostWithLine: 0,
    silent: 0,
    held: 0,
    replacedAtHost: 0,
    waitingAtStop: 0,
    silentReports: [],
  };
  const latest = new Map<string, number>();
  for (const entry of ledger.entries.values())
    latest.set(entry.node, Math.max(latest.get(entry.node) ?? 0, entry.sequence));
  const copied = new Map<string, Set<string>>();
  for (const [id, letter] of evidence.deadLetters) {
    const ids = copied.get(letter.key) ?? new Set<string>();
    ids.add(id);
    copied.set(letter.key, ids);
  }
  for (const [key, entry] of ledger.entries) {
    row.made += 1;
    const ids = new Set([...entry.messageIds, ...(copied.get(key) ?? [])]);
    const some = (set: Set<string>) => [...ids].some((id) => set.has(id));
    const seen = evidence.recorded.has(key) || evidence.stale.has(key) || ids.size > 0;
    if (!entry.accepted && !seen) {
      if ((latest.get(entry.node) ?? 0) > entry.sequence) row.replacedAtHost += 1;
      else row.waitingAtStop += 1;
      continue;
    }
    row.sent += 1;
    if (some(evidence.held)) row.held += 1;
    if (evidence.recorded.has(key)) row.recorded += 1;
    else if (some(evidence.lostLines)) row.lostWithLine += 1;
    else if (evidence.stale.has(key) || some(evidence.setAside)) row.superseded += 1;
    else {
      row.silent += 1;
      row.silentReports.push(`${key} (${entry.state}, message ${[...ids].join(', ') || 'id unknown'})`);
    }
  }
  return row;
}
