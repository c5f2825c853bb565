import type { Parts } from '../../wiring.ts';

/**
 * The push flow's Task handlers (lib/flow/push.asl.json): each is the same task function the
 * local runtime runs in-process, so a deployed push and a local one take the same path.
 */
export const pushBeginHandler = (parts: Pick<Parts, 'pushTasks'>) => parts.pushTasks.Begin;
export const pushFindBehindHandler = (parts: Pick<Parts, 'pushTasks'>) => parts.pushTasks.FindBehind;
export const pushSendHandler = (parts: Pick<Parts, 'pushTasks'>) => parts.pushTasks.Send;
