import { makeSQSClient } from '../lib/adapters/aws-clients.ts';
import { createControlSender } from '../lib/adapters/sqs/control-sender.ts';
import { createControlBuildHandler } from '../lib/api/handlers/control-build.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
export const handler = createControlBuildHandler({
  sender: createControlSender(makeSQSClient(config), config.controlQueueUrl),
});
