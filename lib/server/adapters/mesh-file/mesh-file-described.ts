import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DescribedRevision, DescribedRevisionStore } from '../../core/mesh-file/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { type Item, TableStore } from '../dynamodb/requests.ts';

/**
 * The last file an apply was given (its SHA-256) and the revision of the mesh it describes: one
 * item, read with the mesh by the live mesh reader's Scan (live-mesh-reader.ts). It only ever
 * spares a check when the live mesh is at that revision, that is when the mesh holds what the
 * file asks for, so a put without a condition is enough: the last apply's word wins, and one
 * that is out of date is never used.
 */
export const describedKey = { pk: 'mesh#file', sk: 'described' } as const;

export function describedFrom(item: Item): DescribedRevision | undefined {
  const { fileDigest, revision } = item;
  return typeof fileDigest === 'string' && typeof revision === 'string'
    ? { fileDigest, revision }
    : undefined;
}

export class DynamoDBDescribedRevisions extends TableStore implements DescribedRevisionStore {
  async keep(described: DescribedRevision): Promise<void> {
    await askStore('the inventory table', () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...describedKey, fileDigest: described.fileDigest, revision: described.revision },
        }),
      ),
    );
  }
}
