import { makeSQSClient } from '../lib/adapters/aws-clients.ts';
import { createControlSender } from '../lib/adapters/sqs/control-sender.ts';
import { createControlCatchUpHandler } from '../lib/api/handlers/control-catch-up.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
export const handler = createControlCatchUpHandler({
  sender: createControlSender(makeSQSClient(config), config.controlQueueUrl),
});
