import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDBAuditReader } from '../adapters/audit/audit-reader.ts';
import { DynamoDBRefusalLog } from '../adapters/audit/audit-refusals.ts';
import { type AuditTrail, DynamoDBAuditTrail } from '../adapters/audit/audit-trail.ts';
import type { AuditReader, RefusalLog } from '../core/audit/ports.ts';
import { AnnouncingAuditReader, type EventSink } from '../core/events/index.ts';
import type { MeshConfig } from '../setup/config.ts';

/** A year, unless `MESH_AUDIT_RETENTION_DAYS` says otherwise (docs/audit.md). */
export const defaultAuditRetentionDays = 365;

/** The audit parts of lib/server/wiring/parts.ts (docs/audit.md), built there the same way. */
export type AuditParts = {
  /** What every store that makes a change adds its record with, in the change's own transaction. */
  readonly auditTrail: AuditTrail;
  readonly auditReader: AuditReader;
  /** Refused requests (4xx) counted per source and minute, best effort (every HTTP edge). */
  readonly refusals: RefusalLog;
};

export function auditBuilders(
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
  events: () => EventSink,
): { readonly [Key in keyof AuditParts]: () => AuditParts[Key] } {
  const options = () => ({
    client: clients.dynamodb,
    tableName: config.inventoryTable,
    retentionDays: config.auditRetentionDays ?? defaultAuditRetentionDays,
  });
  return {
    auditTrail: () => new DynamoDBAuditTrail(options()),
    // a verify that finds records which do not check tells `audit.unverified` (docs/events.md)
    auditReader: () => new AnnouncingAuditReader(new DynamoDBAuditReader(options()), events()),
    refusals: () => new DynamoDBRefusalLog(options()),
  };
}
