import type { DeadLetterKind, QueueRecord } from './ports.ts';

/**
 * What the consumer let go or dead-lettered, noted in the inventory (best effort, with a TTL) so
 * operators can see it without receiving from the dead-letter queue: a receive would hide the
 * copies from whoever redrives them, and SQS has no way to list a queue.
 */
export type DeadLetterNote = {
  readonly messageId: string;
  readonly kind: DeadLetterKind;
  readonly reason: string;
  readonly type: string | null;
  readonly subject: string | null;
  /** Whether its copy is on the dead-letter queue (a `lost` one may have been let go without). */
  readonly copied: boolean;
  readonly receiveCount: number;
  readonly firstReceivedAt: string;
  readonly notedAt: string;
  /** The start of the message's body, for recognising it; `bodyBytes` is its whole size. */
  readonly body: string;
  readonly bodyBytes: number;
};

/** How many copies the dead-letter queue holds, as SQS counts them (approximately). */
export type DeadLetterDepth = {
  readonly approximateMessages: number;
  /** Received by someone (a redrive, a person reading it) and not yet deleted. */
  readonly approximateInFlight: number;
};

/** As long as the dead-letter queue keeps its copies (lib/server/setup/resources.ts). */
export const deadLetterNoteDays = 14;
const bodyExcerptCharacters = 2000;

export function deadLetterNoteOf(
  record: QueueRecord,
  letter: {
    readonly kind: DeadLetterKind;
    readonly reason: string;
    readonly type?: string | undefined;
    readonly subject?: string | undefined;
  },
  copied: boolean,
  at: Date,
): DeadLetterNote {
  return {
    messageId: record.messageId,
    kind: letter.kind,
    reason: letter.reason,
    type: letter.type ?? null,
    subject: letter.subject ?? null,
    copied,
    receiveCount: record.receiveCount,
    firstReceivedAt: new Date(record.firstReceivedAtMs).toISOString(),
    notedAt: at.toISOString(),
    body: record.body.slice(0, bodyExcerptCharacters),
    bodyBytes: Buffer.byteLength(record.body),
  };
}
