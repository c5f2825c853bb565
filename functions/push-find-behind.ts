import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBMeshStore } from '../lib/adapters/dynamodb/mesh-store.ts';
import { pushTaskFunctions } from '../lib/adapters/stepfunctions/push-steps-runner.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
const tasks = pushTaskFunctions(
  new DynamoDBMeshStore({ client: makeDynamoDBClient(config), tableName: config.inventoryTable }),
);

/** The push flow's FindBehind Task: the same function the local runner maps that state to. */
export const handler = (input: unknown) => tasks.FindBehind(input);
