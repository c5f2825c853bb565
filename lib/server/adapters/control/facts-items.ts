import type { ReportBody } from '../../core/control/messages.ts';
import { factsItemKey } from '../dynamodb/keys.ts';
import type { TransactItem } from '../dynamodb/requests.ts';

/**
 * What a node's host says of its machine, in the inventory table:
 *
 * | pk          | sk      | attributes |
 * |-------------|---------|------------|
 * | `node#<n>`  | `facts` | os, osVersion?, kernel, arch, agent, build?, cpus (N), memoryBytes (N), bootedAt |
 *
 * Written whole in the report's transaction when the report carries facts, so it holds only when
 * the report is newer; a report without facts leaves it. It carries no time of its own: a host
 * saying the same facts again writes the same item, which moves no counter and puts nothing on
 * the table's stream. The summary counts nodes by `agent` and `os` from it (counters.ts), `mesh
 * status` shows it and selectors match it (host-facts.ts). It goes with the node's partition.
 */
export function factsWrite(tableName: string, report: ReportBody): TransactItem[] {
  if (!report.facts) return [];
  return [{ Put: { TableName: tableName, Item: { ...factsItemKey(report.node), ...report.facts } } }];
}
