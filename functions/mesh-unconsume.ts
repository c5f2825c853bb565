import { meshUnconsumeHandler } from '../lib/api/handlers/mesh-removals.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshUnconsumeHandler(partsFor(readConfig()));
