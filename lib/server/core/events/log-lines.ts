import { codedLine } from '../coded-lines.ts';

/** What the events' sinks say (docs/codes.md). */
export const eventLines = {
  notDelivered: codedLine<{
    readonly type: string;
    readonly how: 'dropped' | 'lost';
    readonly reason: string;
  }>(
    'events.not-delivered',
    'warn',
    ({ type, how, reason }) => `event ${type} ${how === 'dropped' ? 'dropped' : 'not delivered'}: ${reason}`,
  ),
} as const;
