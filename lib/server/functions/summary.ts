import {
  meshSummaryHandler,
  meshSummaryRebuildHandler,
  summaryAggregatorHandler,
} from '../api/handlers/summary.ts';
import type { FunctionSpec } from './spec.ts';

/**
 * The summary (docs/decisions/summary-from-the-stream.md): counters kept by an aggregator on the
 * inventory table's stream, read without reading any node, and counted again on demand.
 */
export const summaryFunctions = [
  {
    name: 'mesh-summary',
    purpose:
      'the counts of the mesh: nodes, enrolled, online, behind, applied and failed per revision, carriers, applied and failed per module version; and what holds nodes back',
    trigger: 'api',
    route: { method: 'GET', path: '/summary', auth: 'operator', role: 'viewer' },
    // inventory:read for the rollouts holding nodes and the freezes in force (hold-reader.ts)
    access: ['summary:read', 'inventory:read'],
    handler: meshSummaryHandler,
  },
  {
    name: 'mesh-summary-rebuild',
    purpose: 'counts the summary again from a full read of the inventory, for recovery',
    trigger: 'api',
    route: { method: 'POST', path: '/summary/rebuild', auth: 'operator', role: 'operator' },
    // audit:write for the rebuild's record, written with its start (docs/audit.md).
    access: ['summary:rebuild', 'audit:write'],
    timeoutSeconds: 29,
    handler: meshSummaryRebuildHandler,
  },
  {
    name: 'summary-aggregator',
    purpose: "applies the inventory stream's changes to the summary's counters, once per change",
    trigger: 'stream',
    access: ['summary:count'],
    timeoutSeconds: 30,
    handler: summaryAggregatorHandler,
  },
] as const satisfies readonly FunctionSpec[];
