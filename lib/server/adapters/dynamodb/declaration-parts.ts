import { createHash } from 'node:crypto';
import { DeleteCommand, type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { mapLimit } from '../../core/map-limit.ts';
import { askStore } from '../../core/unavailable.ts';
import { queryAll } from './requests.ts';

/**
 * A declaration too large for its delivery item, kept in parts beside it.
 *
 * | pk                  | sk                                   | what |
 * |---------------------|--------------------------------------|------|
 * | `declaration#<n>`   | `<revision, 10 digits>#<digest>#<index, 3 digits>` | one part: `bytes` (B), a run of the canonical JSON's UTF-8 |
 *
 * The delivery item (mesh-items.ts) is the head: it names the revision, the digest and how many
 * parts (`parts`), and only a declaration over `inlineBytes` goes in parts; a smaller one stays
 * in the head as it always was. The parts are written first, under keys no head names yet, and
 * only then does the send's transaction put the head; so a host reads either the old head and
 * the old parts, or the new head and the new parts, never a mix, and a send that fails after
 * some parts (a store outage) leaves the old head, which the push tries again. The digest in
 * the key keeps apart two sends racing for one revision (a mint's secret differs), so the loser
 * never overwrites the winner's parts; it removes its own. Parts of older revisions are removed
 * after the head moved on, so a reader that read the old head may find them gone: it reads the
 * head again (delivery-reader.ts). The reader also checks the joined bytes against the digest.
 *
 * The parts have a partition of their own so compose, which reads the node's partition whole,
 * never reads them. They are written outside the send's transaction, whose 100 items and 4 MB
 * hold the head and the mints only; what bounds a declaration is its one answer to the host
 * (lib/server/core/mesh/limits.ts).
 */
export const partsPartition = (node: string) => `declaration#${node}`;

/** A declaration up to this stays in its delivery item: with the item's other attributes, under DynamoDB's 400 KB. */
export const inlineBytes = 350_000;
/** One part's bytes, under the 400 KB an item may be with its keys. */
export const partBytes = 350_000;

const what = 'the inventory table';
const inFlight = 4;

const revisionKey = (revision: number) => String(revision).padStart(10, '0');
const partKey = (node: string, revision: number, digest: string, index: number) => ({
  pk: partsPartition(node),
  sk: `${revisionKey(revision)}#${digest}#${String(index).padStart(3, '0')}`,
});

/** The canonical JSON's UTF-8 bytes, in runs of `partBytes`. */
export function splitParts(canonical: string): Uint8Array[] {
  const bytes = Buffer.from(canonical, 'utf8');
  const parts: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += partBytes) parts.push(bytes.subarray(at, at + partBytes));
  return parts;
}

type Where = { readonly client: DynamoDBDocumentClient; readonly tableName: string; readonly node: string };
type Version = { readonly revision: number; readonly digest: string };

/** Puts every part; unconditional, since the same key holds the same bytes (the digest is in it). */
export async function writeParts(
  where: Where,
  version: Version,
  parts: readonly Uint8Array[],
): Promise<void> {
  await mapLimit(
    parts.map((bytes, index) => ({ bytes, index })),
    inFlight,
    ({ bytes, index }) =>
      askStore(what, () =>
        where.client.send(
          new PutCommand({
            TableName: where.tableName,
            Item: { ...partKey(where.node, version.revision, version.digest, index), bytes },
            ReturnConsumedCapacity: 'TOTAL',
          }),
        ),
      ),
  );
}

/**
 * The declaration joined from its parts, read strongly; undefined when a part is gone (a newer
 * send removed it) or the bytes are not the ones the digest is of.
 */
export async function readParts(where: Where, version: Version, count: number): Promise<string | undefined> {
  const parts = await mapLimit(
    Array.from({ length: count }, (_, index) => index),
    inFlight,
    async (index) => {
      const { Item } = await askStore(what, () =>
        where.client.send(
          new GetCommand({
            TableName: where.tableName,
            Key: partKey(where.node, version.revision, version.digest, index),
            ConsistentRead: true,
            ReturnConsumedCapacity: 'TOTAL',
          }),
        ),
      );
      return Item?.bytes instanceof Uint8Array ? Item.bytes : undefined;
    },
  );
  if (parts.some((part) => part === undefined)) return undefined;
  const joined = Buffer.concat(parts as Uint8Array[]);
  if (createHash('sha256').update(joined).digest('hex') !== version.digest) return undefined;
  return joined.toString('utf8');
}

/** Removes the parts of revisions before `version` (a head that moved on names none of them). */
export async function removePartsBefore(where: Where, version: Version): Promise<void> {
  const stale = await queryAll(where.client, what, {
    TableName: where.tableName,
    KeyConditionExpression: 'pk = :pk AND sk < :revision',
    ExpressionAttributeValues: {
      ':pk': partsPartition(where.node),
      ':revision': revisionKey(version.revision),
    },
    ProjectionExpression: 'pk, sk',
    ConsistentRead: true,
    ReturnConsumedCapacity: 'TOTAL',
  });
  await removeKeys(where, stale as Array<{ pk: string; sk: string }>);
}

/** Removes the parts a send wrote for a head it then lost the race to put. */
export async function removeParts(where: Where, version: Version, count: number): Promise<void> {
  await removeKeys(
    where,
    Array.from({ length: count }, (_, index) => partKey(where.node, version.revision, version.digest, index)),
  );
}

async function removeKeys(where: Where, keys: ReadonlyArray<{ pk: string; sk: string }>): Promise<void> {
  await mapLimit(keys, inFlight, (Key) =>
    askStore(what, () =>
      where.client.send(
        new DeleteCommand({ TableName: where.tableName, Key, ReturnConsumedCapacity: 'TOTAL' }),
      ),
    ),
  );
}
