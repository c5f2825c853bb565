import { PutCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import type { DescribedRevision, DescribedRevisionStore } from '../../core/mesh-file/ports.ts';
import { fileTest, maxFileTests } from '../../core/mesh-file/schema.ts';
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
  const { fileDigest, revision, tests } = item;
  if (typeof fileDigest !== 'string' || typeof revision !== 'string') return undefined;
  // kept as the file's JSON: a test the schema no longer reads makes the next apply check the file
  const kept = typeof tests === 'string' ? fileTestsSchema.safeParse(JSON.parse(tests)) : undefined;
  if (kept && !kept.success) return undefined;
  return { fileDigest, revision, ...(kept?.data ? { tests: kept.data } : {}) };
}

const fileTestsSchema = z.array(fileTest).max(maxFileTests);

export class DynamoDBDescribedRevisions extends TableStore implements DescribedRevisionStore {
  async keep(described: DescribedRevision): Promise<void> {
    await askStore('the inventory table', () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...describedKey,
            fileDigest: described.fileDigest,
            revision: described.revision,
            ...(described.tests ? { tests: JSON.stringify(described.tests) } : {}),
          },
        }),
      ),
    );
  }
}
