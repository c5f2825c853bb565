import { presenceItemKey, reportItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { markedKey, markKey } from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import type { Item } from '../../lib/server/adapters/dynamodb/requests.ts';
import { failedView, offlineView } from '../../lib/server/adapters/views/view-lists.ts';

/**
 * What a fleet's nodes are besides their mesh, written as the stores leave it (push.bench.ts's
 * seedItems writes the mesh): some nodes marked behind (mesh-items.ts's markUpdates), some whose
 * host reported a failed apply (report-store.ts), some online and some offline
 * (presence-store.ts), each on the sparse lists the views page over (view-lists.ts).
 */
export type FleetShape = {
  readonly behind: (i: number) => boolean;
  readonly failed: (i: number) => boolean;
  /** true online, false offline, undefined never connected. */
  readonly online: (i: number) => boolean | undefined;
};

/** One in 50 behind, one in 40 failed, one in 20 offline, the rest online but one in 7 never seen. */
export const fleetShape: FleetShape = {
  behind: (i) => i % 50 === 3,
  failed: (i) => i % 40 === 7,
  online: (i) => (i % 20 === 11 ? false : i % 7 === 0 ? undefined : true),
};

export function fleetStateItems(names: readonly string[], shape: FleetShape = fleetShape): Item[] {
  const at = '2026-01-01T00:00:00.000Z';
  const items: Item[] = [];
  names.forEach((node, i) => {
    if (shape.behind(i))
      items.push(
        { ...markKey(node), marks: 1, node, markedAt: at },
        { ...markedKey(node), node, markedAt: at },
      );
    if (shape.failed(i))
      items.push({
        ...reportItemKey(node),
        sequence: 2,
        state: 'failed',
        revision: 1,
        step: 'apply',
        sentAt: at,
        heardAt: at,
        gsi2pk: failedView,
        gsi2sk: node,
      });
    const online = shape.online(i);
    if (online !== undefined)
      items.push({
        ...presenceItemKey(node),
        online,
        heardAt: at,
        atMs: Date.parse(at),
        version: 1,
        ...(online ? {} : { gsi2pk: offlineView, gsi2sk: node }),
      });
  });
  return items;
}
