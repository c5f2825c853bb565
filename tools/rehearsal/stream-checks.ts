import type { FunctionSpec } from '../../lib/server/functions/table.ts';
import { inventoryTable } from '../../lib/server/setup/resources.ts';
import { type CfnResource, displayName, resourcesOfType } from './assembly.ts';
import { referencedId } from './references.ts';
import type { JudgedStack, RoleMay } from './stack.ts';

const props = (resource: CfnResource | undefined) => resource?.Properties ?? {};

/** A mapping whose source is a table's stream (`Fn::GetAtt [table, StreamArn]`). */
export const readsAStream = (mapping: CfnResource) =>
  /"Fn::GetAtt":\["\w+","StreamArn"\]/.test(JSON.stringify(props(mapping).EventSourceArn));

/**
 * The summary's stream and its event source mapping, as the aggregator relies on them
 * (docs/decisions/summary-from-the-stream.md): the inventory table's stream with both images;
 * one mapping, feeding the stream function, from the shard's start, one batch a shard at a time,
 * with a tumbling window (the shard's id) and the node partitions' filter; the role may read the
 * stream.
 */
export async function checkStreamSource(
  stack: JudgedStack,
  specs: readonly FunctionSpec[],
  roleMay: RoleMay,
): Promise<string[]> {
  const row = specs.find((spec) => spec.trigger === 'stream')?.name;
  const template = stack.assembly.template;
  const mappings = resourcesOfType(template, 'AWS::Lambda::EventSourceMapping').filter(([, m]) =>
    readsAStream(m),
  );
  if (!row) return mappings.length === 0 ? [] : ['a stream event source mapping, but no stream function'];
  if (mappings.length !== 1)
    return [`the template has ${mappings.length} stream event source mappings, where ${row} has one`];
  const [id, mapping] = mappings[0] as [string, CfnResource];
  const where = displayName(template, id);
  const p = props(mapping);
  const findings: string[] = [];
  const aggregator = stack.functions.get(row);
  if (!aggregator || referencedId(p.FunctionName) !== aggregator.logicalId)
    findings.push(`${where}: does not feed the table's stream function ${row}`);
  const tableId = referencedId(p.EventSourceArn);
  const table = tableId ? template.Resources[tableId] : undefined;
  if (!tableId || displayName(template, tableId) !== 'Tables/Inventory')
    findings.push(`${where}: reads ${tableId ?? 'nothing'}, not the inventory table's stream`);
  const stream = props(table).StreamSpecification as { StreamViewType?: string } | undefined;
  if (stream?.StreamViewType !== inventoryTable.stream)
    findings.push(
      `Tables/Inventory: stream ${stream?.StreamViewType ?? 'none'}, where the aggregator needs ${inventoryTable.stream}`,
    );
  if (p.StartingPosition !== 'TRIM_HORIZON')
    findings.push(
      `${where}: StartingPosition ${String(p.StartingPosition)}: changes before the mapping would be missed`,
    );
  if (Number(p.ParallelizationFactor ?? 1) !== 1)
    findings.push(
      `${where}: ParallelizationFactor ${String(p.ParallelizationFactor)}: a shard's watermark needs its batches one at a time`,
    );
  if (!(Number(p.TumblingWindowInSeconds ?? 0) > 0))
    findings.push(`${where}: no tumbling window, so the events carry no shardId for the watermark`);
  if (!JSON.stringify(p.FilterCriteria ?? {}).includes('node#'))
    findings.push(
      `${where}: no filter to node partitions: the counters' own writes would invoke the aggregator`,
    );
  const streamArn = tableId ? stack.references.identity(tableId)?.attributes.StreamArn : undefined;
  if (aggregator && typeof streamArn === 'string')
    for (const action of ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator']) {
      const denied = await roleMay(
        stack,
        aggregator.roleLogicalId,
        `${aggregator.displayName} (its event source mapping)`,
        {
          action,
          resource: streamArn,
        },
      );
      if (denied) findings.push(denied);
    }
  return findings;
}
