import type { CountedOccurrences, Log } from '../../core/ports.ts';
import type { PushFlow, PushTaskFunctions } from '../../core/push/ports.ts';
import { type PushJob, runPushJob } from '../../core/push/runs.ts';

/**
 * The push flow's Task handlers (lib/server/flows/push.asl.json): each is the same task function the
 * local runtime runs in-process, so a deployed push and a local one take the same path. The
 * signals a task could not publish are counted as it goes and published once, after it.
 */
/** A flow's Task, as its Lambda function runs it; push-run, invoked and let go. */
type FlowTaskHandler = (input: unknown) => Promise<unknown>;
type InvokedHandler = (
  event: unknown,
  context?: { getRemainingTimeInMillis(): number; readonly invokedFunctionArn: string },
) => Promise<void>;

type TaskParts = { readonly pushTasks: PushTaskFunctions; readonly signalFailures?: CountedOccurrences };

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
export const pushFindBehindHandler = (parts: { readonly pushTasks: PushTaskFunctions }) =>
  parts.pushTasks.FindBehind;
export const pushSendHandler = (parts: TaskParts) => counted(parts, parts.pushTasks.Send);

/**
 * push-run: a push mesh-push recorded and started (lib/server/core/push/runs.ts); before its time
 * runs out it hands the push on to a fresh invocation of itself, by the ARN it was invoked by.
 */
export const pushRunHandler =
  (parts: {
    readonly pushFlow: PushFlow;
    readonly log: Log;
    readonly pushHandOn: (functionArn: string) => (job: PushJob) => Promise<void>;
  }): InvokedHandler =>
  (event, context) =>
    runPushJob(
      event,
      parts,
      context
        ? {
            remainingMs: () => context.getRemainingTimeInMillis(),
            handOn: parts.pushHandOn(context.invokedFunctionArn),
          }
        : undefined,
    );
