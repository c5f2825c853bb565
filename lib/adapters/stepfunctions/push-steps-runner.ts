import { Pusher } from '../../core/mesh/push.ts';
import { beginPush, findBehind, sendBatch } from '../../core/mesh/push-steps.ts';
import type { MeshStore } from '../../core/mesh/store.ts';

/** The push flow's Task functions, keyed by state name: what each Lambda handler calls. */
export function pushTaskFunctions(store: MeshStore) {
  const pusher = new Pusher({ store });
  return {
    Begin: (input: unknown) => beginPush(pusher, input),
    FindBehind: (input: unknown) => findBehind(pusher, input),
    Send: (input: unknown) => sendBatch(pusher, input),
  } as const;
}

export type PushTaskFunctions = ReturnType<typeof pushTaskFunctions>;
