import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalRuntime } from '../lib/local/local-runtime.ts';
import { DynamoDBAuditTrail } from '../lib/server/adapters/audit/audit-trail.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBModuleVersions } from '../lib/server/adapters/mesh/module-versions.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { mapLimit } from '../lib/server/core/map-limit.ts';
import { partsWatchingTransactions } from '../test/support/watched-transactions.ts';
import type { BenchTable } from './support/table.ts';

const carriers = Number(process.env.MESH_BENCH_CARRIERS ?? 1000);
/** Added to each transaction, as the round trip to DynamoDB costs from a Lambda in its region. */
const awsLatencyMs = 15;

/**
 * An upgrade's pass over a module carried by `carriers` nodes, on DynamoDB Local: one carrier at
 * a time against 8 at a time (module-versions.ts), with nothing added to each transaction and
 * with a round trip like AWS's added, then a repeat of the same version (every carrier already
 * there). Each pass moves every carrier to a version of its own. The consumer has 30 s.
 */
export async function run(): Promise<BenchTable[]> {
  const runtime = await startLocalRuntime({ port: 0, mqttPort: 0, logLevel: 'ERROR' });
  const { parts, config } = runtime;
  try {
    process.stdout.write(`  assigning base to ${carriers} nodes\n`);
    const nodes = Array.from({ length: carriers }, (_, index) => `carrier-${index}`);
    await mapLimit(nodes, 8, (node) => parts.meshService.addNode(node, {}, localActor()));
    // one at a time: assignments of one module race on its record
    for (const node of nodes) await parts.meshService.assign(node, 'base', null, localActor());

    const rows: Array<Array<string | number>> = [];
    let version = 0;
    for (const latencyMs of [0, awsLatencyMs]) {
      for (const inFlight of [1, 8]) {
        const watch = { inFlight: 0, maxInFlight: 0 };
        const { counted, client } = partsWatchingTransactions(config, {
          before: async () => {
            watch.inFlight += 1;
            watch.maxInFlight = Math.max(watch.maxInFlight, watch.inFlight);
            if (latencyMs > 0) await sleep(latencyMs);
          },
          after: async () => {
            watch.inFlight -= 1;
          },
        });
        const where = { client: documentClient(client), tableName: config.inventoryTable };
        const versions = new DynamoDBModuleVersions({
          ...where,
          audit: new DynamoDBAuditTrail({ ...where, retentionDays: 365 }),
          carriersInFlight: inFlight,
        });
        version += 1;
        process.stdout.write(`  ${inFlight} in flight, +${latencyMs} ms: moving to ${version}.0\n`);
        const started = performance.now();
        await versions.setModuleVersion('base', `${version}.0`, localActor());
        const passMs = performance.now() - started;
        const moved = counted.transactions;
        const again = performance.now();
        await versions.setModuleVersion('base', `${version}.0`, localActor());
        const repeatMs = performance.now() - again;
        rows.push([
          `${inFlight} at a time`,
          `+${latencyMs} ms`,
          moved,
          watch.maxInFlight,
          passMs / 1000,
          passMs / moved,
          ((passMs / moved) * 10_000) / 1000,
          repeatMs / 1000,
          counted.transactions - moved,
        ]);
      }
    }
    return [
      {
        title: `upgrade: one pass over ${carriers} carriers on DynamoDB Local (seconds unless named)`,
        columns: [
          'carriers',
          'added per transaction',
          'transactions',
          'most in flight',
          'pass',
          'ms per carrier',
          'pass at 10,000 carriers',
          'repeat',
          'repeat transactions',
        ],
        rows,
        notes: [
          "with nothing added, the pass is bound by DynamoDB Local's own work (about 3 ms a transaction on this machine); with a round trip added, as on AWS, 8 in flight overlap their waits",
          'pass at 10,000 carriers: the ms per carrier, times 10,000; the queue consumer has 30 s',
          'repeat: the same version again (a held upgrade settled again, a catch-up); carriers already at it are skipped',
        ],
      },
    ];
  } finally {
    await runtime.stop();
  }
}
