import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBLiveMeshReader } from '../lib/adapters/dynamodb/live-mesh-reader.ts';
import { DynamoDBMeshFileWriter } from '../lib/adapters/dynamodb/mesh-file-writer.ts';
import { documentClient } from '../lib/adapters/dynamodb/requests.ts';
import { planApply } from '../lib/core/mesh-file/plan.ts';
import { checkMeshFile } from '../lib/core/mesh-file/read.ts';
import { generatedFile } from './apply.bench.ts';
import { benchEnvironment } from './support/environment.ts';

const env = await benchEnvironment();
const size = Number(process.env.SIZE ?? 1000);
try {
  for (const lanes of (process.env.LANES ?? '1,4').split(',').map(Number)) {
    const config = await env.provision(`prof${lanes}${Math.random().toString(36).slice(2, 6)}`);
    const raw = makeDynamoDBClient(config);
    const client = documentClient(raw);
    let txns = 0;
    let txnMs = 0;
    raw.middlewareStack.add(
      (next) => async (args) => {
        const s = performance.now();
        try {
          return await next(args);
        } finally {
          if ((args.input as any).TransactItems) {
            txns++;
            txnMs += performance.now() - s;
          }
        }
      },
      { step: 'initialize', name: 'prof' },
    );
    const reader = new DynamoDBLiveMeshReader({ client, tableName: config.inventoryTable } as any);
    const writer = new DynamoDBMeshFileWriter({ client, tableName: config.inventoryTable, lanes });
    let t = performance.now();
    const file = generatedFile(size);
    const reading = await reader.read();
    const readMs = performance.now() - t;
    t = performance.now();
    const checked = checkMeshFile(file, { kinds: reading.mesh.modules });
    const checkMs = performance.now() - t;
    t = performance.now();
    const plan = planApply(checked.mesh!, reading.mesh, {
      prune: false,
      allowMassRemoval: false,
      locate: checked.locate,
      tests: [],
    });
    const planMs = performance.now() - t;
    t = performance.now();
    const w = await writer.write(plan, reading);
    const writeMs = performance.now() - t;
    t = performance.now();
    const again = await reader.read();
    const reread = performance.now() - t;
    t = performance.now();
    const checked2 = checkMeshFile(file, { kinds: again.mesh.modules });
    const plan2 = planApply(checked2.mesh!, again.mesh, {
      prune: false,
      allowMassRemoval: false,
      locate: checked2.locate,
      tests: [],
    });
    const replan = performance.now() - t;
    console.log(
      JSON.stringify({
        size,
        lanes,
        readMs,
        checkMs,
        planMs,
        writeMs,
        ...w,
        txns,
        avgTxnMs: txnMs / txns,
        reread,
        replan,
        planBytes: JSON.stringify(plan).length,
      }),
    );
    raw.destroy();
  }
} finally {
  await env.stop();
}
