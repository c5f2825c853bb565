export * from './announcing.ts';
export * from './events.ts';
export * from './log-lines.ts';
