import { PresenceOfUnknownNodeError, StalePresenceError } from '../../core/signal/errors.ts';
import type { PresenceStore } from '../../core/signal/ports.ts';
import { type PresenceEvent, versionTrustMs } from '../../core/signal/presence.ts';
import { nodeItemKey, presenceItemKey } from '../dynamodb/keys.ts';
import { itemAbsent, itemPresent, TableStore, transact } from '../dynamodb/requests.ts';
import { offlineView } from '../views/view-lists.ts';

/**
 * A node's presence on the broker, in the inventory table:
 *
 * | pk          | sk         | attributes |
 * |-------------|------------|------------|
 * | `node#<n>`  | `presence` | online (BOOL), heardAt (ISO), atMs (N), version (N), gsi2pk/gsi2sk (`view#offline` / `<n>`, only while offline) |
 *
 * Access: one transaction per lifecycle event, the node's item checked to exist and to be older
 * than the event (a node removed since its host connected gets no presence item back, nor does
 * a node added again under its name) and the presence item written only when
 * the event is newer than the one recorded (lib/server/core/signal/presence.ts): of a newer
 * connection, or later within the same one, or newer by more than `versionTrustMs`. `mesh
 * status` reads it with the node's other items (status-reader.ts).
 */
const nodeExists = itemPresent;
const addedBeforeEvent = 'createdAt <= :heardAt';
const nothingRecordedYet = itemAbsent;
const olderConnectionRecorded = '#version < :version';
const earlierInSameConnection = '(#version = :version AND atMs < :atMs)';
const recordedLongBefore = 'atMs < :trustedBefore';
const newerEventWins = [
  nothingRecordedYet,
  olderConnectionRecorded,
  earlierInSameConnection,
  recordedLongBefore,
].join(' OR ');

export class DynamoDBPresenceStore extends TableStore implements PresenceStore {
  async recordPresence(event: PresenceEvent): Promise<void> {
    const failed = await transact(this.client, 'recording presence', [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: nodeItemKey(event.node),
          ConditionExpression: `${nodeExists} AND ${addedBeforeEvent}`,
          ExpressionAttributeValues: { ':heardAt': new Date(event.atMs).toISOString() },
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: presenceItemKey(event.node),
          // On gsi2's offline list while disconnected, off it once connected (view-lists.ts).
          UpdateExpression:
            event.state === 'connected'
              ? 'SET #online = :online, heardAt = :heardAt, atMs = :atMs, #version = :version REMOVE gsi2pk, gsi2sk'
              : 'SET #online = :online, heardAt = :heardAt, atMs = :atMs, #version = :version, gsi2pk = :offlineView, gsi2sk = :node',
          ConditionExpression: newerEventWins,
          ExpressionAttributeNames: { '#online': 'online', '#version': 'version' },
          ExpressionAttributeValues: {
            ':online': event.state === 'connected',
            ':heardAt': new Date(event.atMs).toISOString(),
            ':atMs': event.atMs,
            ':version': event.version,
            ':trustedBefore': event.atMs - versionTrustMs,
            ...(event.state === 'connected' ? {} : { ':offlineView': offlineView, ':node': event.node }),
          },
        },
      },
    ]);
    if (!failed) return;
    if (failed[0]) {
      const createdAt = failed[0].old?.createdAt;
      throw new PresenceOfUnknownNodeError(
        typeof createdAt === 'string'
          ? `presence of ${event.node} at ${new Date(event.atMs).toISOString()} is from before node ${event.node} was added (${createdAt}): of a node of that name removed since`
          : `there is no node ${event.node}`,
      );
    }
    const kept = failed[1]?.old;
    throw new StalePresenceError(
      `presence of ${event.node} at ${event.atMs} (version ${event.version}) is older than the recorded ${String(kept?.atMs)} (version ${String(kept?.version)})`,
    );
  }
}
