import { runPushJob } from '../../core/mesh/push-runs.ts';
import type { FlowTaskHandler, InvokedHandler } from '../../functions/spec.ts';
import type { Parts } from '../../wiring.ts';

/**
 * The push flow's Task handlers (lib/flow/push.asl.json): each is the same task function the
 * local runtime runs in-process, so a deployed push and a local one take the same path. The
 * signals a task could not publish are counted as it goes and published once, after it.
 */
type TaskParts = Pick<Parts, 'pushTasks'> & Partial<Pick<Parts, 'signalFailures'>>;

const counted =
  (parts: TaskParts, task: FlowTaskHandler): FlowTaskHandler =>
  async (input) => {
    try {
      return await task(input);
    } finally {
      await parts.signalFailures?.publish();
    }
  };

export const pushBeginHandler = (parts: TaskParts) => counted(parts, parts.pushTasks.Begin);
export const pushFindBehindHandler = (parts: Pick<Parts, 'pushTasks'>) => parts.pushTasks.FindBehind;
export const pushSendHandler = (parts: TaskParts) => counted(parts, parts.pushTasks.Send);

/** push-run: a push mesh-push recorded and started (lib/core/mesh/push-runs.ts). */
export const pushRunHandler =
  (parts: Pick<Parts, 'pushFlow' | 'log'>): InvokedHandler =>
  (event) =>
    runPushJob(event, parts);
