import { makeSQSClient } from '../lib/adapters/aws-clients.ts';
import { createControlSender } from '../lib/adapters/sqs/control-sender.ts';
import { createControlUpgradeHandler } from '../lib/api/handlers/control-upgrade.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
export const handler = createControlUpgradeHandler({
  sender: createControlSender(makeSQSClient(config), config.controlQueueUrl),
});
