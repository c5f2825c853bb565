import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { type DeadLetterNote, deadLetterNoteDays } from '../../core/control/dead-letter-notes.ts';
import type { DeadLetterLog, DeadLetterReader } from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { type Item, newestItems, TableStore } from '../dynamodb/requests.ts';

/**
 * What the control consumer let go or dead-lettered (lib/server/core/control/dead-letter-notes.ts), in the
 * inventory table:
 *
 * | pk        | sk                                  | attributes |
 * |-----------|-------------------------------------|------------|
 * | `letters` | `<first received, ISO>#<message id>` | the note: messageId, kind, reason, type, subject, copied, receiveCount, firstReceivedAt, notedAt, body (the first 2,000 characters), bodyBytes; expiresAt (epoch seconds, TTL) |
 *
 * Access: one PutItem per note, unconditional, so the same message noted again (a delete that
 * failed after its copy) is kept once, as last noted; read with one strongly consistent Query,
 * newest first. Kept as long as the dead-letter queue keeps its copies.
 */
export const deadLetterNotesPartition = 'letters';

const store = 'the inventory table';

export class DynamoDBDeadLetterLog extends TableStore implements DeadLetterLog, DeadLetterReader {
  async note(letter: DeadLetterNote): Promise<void> {
    const expiresAt = Math.floor(Date.parse(letter.notedAt) / 1000) + deadLetterNoteDays * 24 * 3600;
    await askStore(store, () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: deadLetterNotesPartition,
            sk: `${letter.firstReceivedAt}#${letter.messageId}`,
            ...letter,
            expiresAt,
          },
        }),
      ),
    );
  }

  async list(limit: number): Promise<DeadLetterNote[]> {
    const items = await newestItems(this.client, store, {
      tableName: this.tableName,
      partition: deadLetterNotesPartition,
      limit,
    });
    return items.map(noteFrom);
  }
}

function noteFrom(item: Item): DeadLetterNote {
  const { pk: _pk, sk: _sk, expiresAt: _expiresAt, ...note } = item;
  return note as DeadLetterNote;
}
