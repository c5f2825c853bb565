import { controlConsumerHandler } from '../lib/server/api/handlers/control-consumer.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = controlConsumerHandler(partsFor(readConfig()));
