#!/usr/bin/env node
import { makeDynamoDBClient, makeSQSClient } from '../lib/server/adapters/aws-clients.ts';
import { SqsControlSender } from '../lib/server/adapters/control/control-sender.ts';
import { DynamoDBSealingKeysFromBefore } from '../lib/server/adapters/mesh/sealing-keys-from-before.ts';
import { queueOne } from '../lib/server/api/handlers/control.ts';
import { envelope } from '../lib/server/core/control/messages.ts';
import {
  keysFromBeforeLine,
  recordSealingKeysFromBefore,
} from '../lib/server/core/sealing/keys-from-before.ts';

/**
 * The one-shot upgrade of a deployed control plane whose hosts enrolled before the enrolment
 * kept their sealing key (docs/decisions/sealed-secrets.md, "From before sealing"): each such
 * node's key is copied from the identity table onto its enrolment and `enrolled:<node>` is put
 * on the control queue, whose consumer mints and pushes the relations that waited. The local
 * runtime does the same at each start. Run with credentials that may Scan and UpdateItem the
 * inventory, BatchGetItem the identity table and SendMessage to the control queue, and the
 * stack's outputs in MESH_INVENTORY_TABLE, MESH_IDENTITY_TABLE and MESH_CONTROL_QUEUE_URL.
 */
const names = ['MESH_INVENTORY_TABLE', 'MESH_IDENTITY_TABLE', 'MESH_CONTROL_QUEUE_URL'] as const;
const missing = names.filter((name) => !process.env[name]);
if (missing.length > 0) {
  process.stderr.write(
    `upgrade-sealing-keys: set ${missing.join(', ')} (the stack's InventoryTableName, IdentityTableName, ControlQueueUrl)\n`,
  );
  process.exit(2);
}
const region = process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
const dynamodb = makeDynamoDBClient({ region });
const sqs = makeSQSClient({ region });
const sender = new SqsControlSender({ client: sqs, queueUrl: process.env.MESH_CONTROL_QUEUE_URL as string });
try {
  const outcome = await recordSealingKeysFromBefore({
    store: new DynamoDBSealingKeysFromBefore({
      client: dynamodb,
      inventoryTable: process.env.MESH_INVENTORY_TABLE as string,
      identityTable: process.env.MESH_IDENTITY_TABLE as string,
    }),
    announce: async (node) => {
      await queueOne(sender, { message: envelope('enrolled', { node }) });
    },
  });
  process.stdout.write(
    `${keysFromBeforeLine(outcome) || 'no node enrolled before sealing: nothing to record'}\n`,
  );
} finally {
  dynamodb.destroy();
  sqs.destroy();
}
