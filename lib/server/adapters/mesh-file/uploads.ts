import { gunzipSync, gzipSync } from 'node:zlib';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  type MeshUpload,
  type MeshUploadStore,
  type UploadedPart,
  UploadNotFoundError,
  UploadPartDiffersError,
} from '../../core/mesh-file/uploads.ts';
import { askStore } from '../../core/unavailable.ts';
import { itemAbsent, queryAll, TableStore, transact } from '../dynamodb/requests.ts';

/**
 * Uploads of mesh files (lib/server/core/mesh-file/uploads.ts) in the inventory table:
 *
 * | pk                   | sk               | attributes |
 * |----------------------|------------------|------------|
 * | `mesh#upload#<id>`   | `upload`         | upload: the upload (M: bytes, sha256, parts, by, createdAt); expiresAt (TTL) |
 * | `mesh#upload#<id>`   | `part#<nnnn>`    | part, bytes, sha256, chunks (N); expiresAt |
 * | `mesh#upload#<id>`   | `part#<nnnn>#<cc>` | data (B): the part's bytes gzipped, cut in chunks of at most 300 KB; expiresAt |
 *
 * A part is one transaction: the upload's item checked (still there, not past its time), the
 * part's item put only if absent or holding the same SHA-256, and its chunks. A part is at most
 * 3 MiB, so its chunks are at most 11 items and about 3.2 MB even when gzip gains nothing: within
 * DynamoDB's 100 items and 4 MB a transaction, each item within its 400 KB. Every item carries
 * the upload's `expiresAt`, so the table's TTL takes an abandoned upload whole; reads check the
 * time themselves, since the TTL deletes late.
 */
const partition = (id: string) => `mesh#upload#${id}`;
const uploadKey = (id: string) => ({ pk: partition(id), sk: 'upload' });
const partSk = (part: number) => `part#${String(part).padStart(4, '0')}`;
const chunkBytes = 300 * 1024;
const store = 'the inventory table';

export class DynamoDBMeshUploads extends TableStore implements MeshUploadStore {
  async create(upload: MeshUpload): Promise<void> {
    const { id, expiresAt, ...rest } = upload;
    await askStore(store, () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...uploadKey(id), upload: { id, expiresAt, ...rest }, expiresAt },
          ConditionExpression: itemAbsent,
        }),
      ),
    );
  }

  async read(id: string) {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': partition(id) },
      // the chunks' data stays where it is: a read of parts costs their small items only
      ProjectionExpression: 'sk, upload, part, bytes, sha256',
      ConsistentRead: true,
    });
    const head = items.find((item) => item.sk === 'upload');
    if (!head) return undefined;
    const parts = items
      .filter((item) => /^part#\d{4}$/.test(String(item.sk)))
      .map((item) => ({ part: Number(item.part), bytes: Number(item.bytes), sha256: String(item.sha256) }));
    return { upload: head.upload as MeshUpload, parts };
  }

  async putPart(upload: MeshUpload, part: UploadedPart, data: Buffer): Promise<void> {
    const zipped = gzipSync(data);
    const chunks: Buffer[] = [];
    for (let at = 0; at < zipped.length; at += chunkBytes) chunks.push(zipped.subarray(at, at + chunkBytes));
    const { expiresAt } = upload;
    const failed = await transact(this.client, store, [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: uploadKey(upload.id),
          ConditionExpression: 'attribute_exists(pk) AND expiresAt > :now',
          ExpressionAttributeValues: { ':now': Math.floor(Date.parse(this.now()) / 1000) },
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: {
            pk: partition(upload.id),
            sk: partSk(part.part),
            ...part,
            chunks: chunks.length,
            expiresAt,
          },
          ConditionExpression: `${itemAbsent} OR sha256 = :sha256`,
          ExpressionAttributeValues: { ':sha256': part.sha256 },
        },
      },
      ...chunks.map((chunk, index) => ({
        Put: {
          TableName: this.tableName,
          Item: {
            pk: partition(upload.id),
            sk: `${partSk(part.part)}#${String(index).padStart(2, '0')}`,
            data: chunk,
            expiresAt,
          },
        },
      })),
    ]);
    if (!failed) return;
    if (failed[0]) throw new UploadNotFoundError(upload.id, true);
    throw new UploadPartDiffersError(part.part);
  }

  async partData(upload: MeshUpload, parts: readonly UploadedPart[]): Promise<readonly Buffer[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :part)',
      ExpressionAttributeValues: { ':pk': partition(upload.id), ':part': 'part#' },
      ConsistentRead: true,
    });
    const chunksOf = new Map<string, Buffer[]>();
    const counts = new Map<string, number>();
    for (const item of items.sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1))) {
      const [, number, chunk] = String(item.sk).split('#');
      const key = `part#${number}`;
      if (chunk === undefined) counts.set(key, Number(item.chunks));
      else chunksOf.set(key, [...(chunksOf.get(key) ?? []), Buffer.from(item.data as Uint8Array)]);
    }
    return parts.map((part) => {
      const key = partSk(part.part);
      // a part's chunks are written with its item, in one transaction: the count names them all
      const chunks = (chunksOf.get(key) ?? []).slice(0, counts.get(key) ?? 0);
      return gunzipSync(Buffer.concat(chunks));
    });
  }
}
