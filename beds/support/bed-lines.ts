import { codedLine } from '../../lib/server/core/coded-lines.ts';

/** What the beds' own entry points say when they switch a part (printed as the runtime's lines are). */
export const bedLines = {
  brokerStopped: codedLine('bed.broker-stopped', 'info', () => 'the broker is stopped'),
  brokerStarted: codedLine('bed.broker-started', 'info', () => 'the broker is started again'),
} as const;
