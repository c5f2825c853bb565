import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ReleaseRecords, StoredRelease } from '../../core/agent-release/ports.ts';
import { type Actor, meshSubject } from '../../core/audit/record.ts';
import { askStore } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import { type Item, itemAbsent, queryAll } from '../dynamodb/requests.ts';

/**
 * The releases published, in the inventory table (the executables are elsewhere: ReleaseFiles):
 *
 * | pk               | sk                 | attributes |
 * |------------------|--------------------|------------|
 * | `agent#releases` | `<version>#<arch>` | release (the signed manifest), publishedAt, publishedBy |
 *
 * One small partition: a release is about 1 KB, so a thousand releases are one query page. A
 * put is written only where none is, with its audit record (`agent.publish`).
 */
const partition = 'agent#releases';
const keyOf = (version: string, arch: string) => ({ pk: partition, sk: `${version}#${arch}` });
const store = 'the inventory table';

export class DynamoDBReleaseRecords extends AuditedTableStore implements ReleaseRecords {
  async put(release: StoredRelease, by: Actor): Promise<{ stored: boolean; kept: StoredRelease }> {
    const { version, arch, sha256, bytes } = release.manifest;
    const failed = await this.audit.transact(
      store,
      [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...keyOf(version, arch), ...itemOf(release) },
            ConditionExpression: itemAbsent,
          },
        },
      ],
      {
        by,
        action: 'agent.publish',
        subject: meshSubject,
        target: `release:${version}/${arch}`,
        details: { sha256, bytes },
      },
    );
    if (failed === undefined) return { stored: true, kept: release };
    const old = failed[0]?.old;
    const kept = old ? releaseFrom(old) : await this.read(version, arch);
    if (!kept) throw new Error(`release ${version} (${arch}): refused as present, then not found`);
    return { stored: false, kept };
  }

  async read(version: string, arch: string): Promise<StoredRelease | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: keyOf(version, arch), ConsistentRead: true }),
      ),
    );
    return Item ? releaseFrom(Item) : undefined;
  }

  async list(): Promise<StoredRelease[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': partition },
    });
    return items
      .map(releaseFrom)
      .sort((a, b) => (a.publishedAt < b.publishedAt ? 1 : a.publishedAt > b.publishedAt ? -1 : 0));
  }
}

const itemOf = (release: StoredRelease): Item => ({
  release: JSON.stringify({ manifest: release.manifest, signature: release.signature }),
  publishedAt: release.publishedAt,
  publishedBy: release.publishedBy,
});

function releaseFrom(item: Item): StoredRelease {
  const { manifest, signature } = JSON.parse(String(item.release));
  return {
    manifest,
    signature,
    publishedAt: String(item.publishedAt),
    publishedBy: String(item.publishedBy),
  };
}
