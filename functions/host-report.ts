import { makeSQSClient } from '../lib/adapters/aws-clients.ts';
import { createControlSender } from '../lib/adapters/sqs/control-sender.ts';
import { createHostReportHandler } from '../lib/api/handlers/host-report.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
export const handler = createHostReportHandler({
  sender: createControlSender(makeSQSClient(config), config.controlQueueUrl),
});
