/**
 * What a function may touch; the CDK grants exactly these to its role and nothing else.
 * `pushFlow:start` is StartSyncExecution on the push state machine. `proofs:write` is PutItem
 * on the inventory for items whose partition key starts `proof#` only (the host proof replay
 * guard), so a host route can remember proof ids without being able to write the inventory.
 */
export type Access =
  | 'inventory:read'
  | 'inventory:write'
  | 'proofs:write'
  | 'identity:read'
  | 'identity:write'
  | 'control:send'
  | 'control:consume'
  | 'deadLetter:send'
  | 'pushFlow:start';

export type FunctionSpec = {
  /** The handler's file in functions/, without extension. */
  readonly name: string;
  readonly purpose: string;
  readonly access: readonly Access[];
  /** api: behind a route of lib/api/routes.ts; queue: the control queue's consumer; flow: a push flow task. */
  readonly trigger: 'api' | 'queue' | 'flow';
  /** @default 10 (api, flow) or consumerTimeoutSeconds (queue) */
  readonly timeoutSeconds?: number;
  /** @default 256 */
  readonly memoryMb?: number;
};
