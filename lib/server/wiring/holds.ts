import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AuditTrail } from '../adapters/audit/audit-trail.ts';
import { DynamoDBFreezeStore } from '../adapters/hold/freeze-store.ts';
import { DynamoDBHoldReader } from '../adapters/hold/hold-reader.ts';
import type { FreezeStore, HoldReader } from '../core/hold/ports.ts';
import { Freezes } from '../core/hold/service.ts';
import type { MeshConfig } from '../setup/config.ts';

/** The parts of lib/server/wiring/parts.ts that hold nodes back (docs/decisions/held-back.md), built there the same way. */
export type HoldParts = {
  /** What every send reads to know which nodes a rollout or a freeze holds back. */
  readonly holds: HoldReader;
  readonly freezeStore: FreezeStore;
  readonly freezes: Freezes;
};

type Needs = { readonly auditTrail: AuditTrail; readonly now: () => Date };

export function holdBuilders(
  partsOf: () => HoldParts & Needs,
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
): { readonly [Key in keyof HoldParts]: () => HoldParts[Key] } {
  const table = () => ({ client: clients.dynamodb, tableName: config.inventoryTable });
  return {
    holds: () => new DynamoDBHoldReader({ ...table(), now: partsOf().now }),
    freezeStore: () => new DynamoDBFreezeStore({ ...table(), audit: partsOf().auditTrail }),
    freezes: () => new Freezes({ store: partsOf().freezeStore, now: partsOf().now }),
  };
}
