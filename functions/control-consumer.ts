import { controlConsumerHandler } from '../lib/api/handlers/control-consumer.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = controlConsumerHandler(partsFor(readConfig()));
