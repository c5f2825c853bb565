import { readFileSync } from 'node:fs';
import { StateMachine } from 'aws-local-stepfunctions';

/** What aws-local-stepfunctions says it did, as far as the count needs it. */
export type EventLog = { readonly type: string; readonly state?: { readonly name: string } };

/**
 * A Standard execution's history events, counted as AWS counts them from what
 * aws-local-stepfunctions says it did: ExecutionStarted and ExecutionSucceeded; a state's
 * Entered and Exited; a Lambda Task's LambdaFunctionScheduled, Started and Succeeded between
 * them; a service integration's TaskScheduled, Started, Submitted and Succeeded; and each retry's
 * failure, schedule and start.
 */
export function historyEventsOf(
  definition: { readonly States: Record<string, { readonly Type: string; readonly Resource?: string }> },
  events: readonly EventLog[],
): number {
  let count = 0;
  for (const event of events) {
    if (['ExecutionStarted', 'ExecutionSucceeded', 'ExecutionFailed'].includes(event.type)) count += 1;
    else if (event.type === 'StateEntered') {
      const state = definition.States[event.state?.name ?? ''];
      count += 2;
      if (state?.Type === 'Task') count += state.Resource?.startsWith('arn:aws:states:::') ? 4 : 3;
    } else if (event.type === 'StateRetried') count += 3;
  }
  return count;
}

type SteppingInput = { id: string; run: string; generation: number; loops: number };

/** One execution of a stepping flow: its name, its history events as AWS counts them, its Advance calls. */
export type SteppingExecution = { readonly name: string; readonly events: number; readonly loops: number };

/** What a stepping flow's Advance answers: done, or how long its Wait lasts. */
export type Advanced = { readonly finished: boolean; readonly waitSeconds: number };

/**
 * A stepping flow (lib/server/flows/stepping-flows.ts) run from its ASL file by
 * aws-local-stepfunctions for `hours` of simulated time, its Advance answering "wait
 * `waitSeconds`" until then; each continuation (ContinueAsNew) is run as the next execution, with
 * the input and name it asked for. Waits take no real time. `advance` replaces the Advance that
 * answers "wait": it is told the job's input, and each Wait's seconds are added to `simulated`.
 */
export async function runSteppingFlow(
  aslPath: string,
  hours: number,
  waitSeconds = 10,
  options: {
    readonly id?: string;
    readonly advance?: (given: { readonly id: string }) => Promise<Advanced>;
    /** Told each Advance's input and output in bytes (the flow's state is no larger). */
    readonly measured?: (bytes: number) => void;
  } = {},
): Promise<{ readonly executions: SteppingExecution[]; readonly simulated: number }> {
  // the function's ARN where CDK fills the placeholder
  const definition = JSON.parse(
    readFileSync(aslPath, 'utf8').replace(
      /\$\{\w+FunctionArn\}/g,
      'arn:aws:lambda:us-east-1:000000000000:function:advance',
    ),
  );
  const machine = new StateMachine(definition);
  const stateMachineArn = 'arn:aws:states:us-east-1:000000000000:stateMachine:SteppingFlow';
  let simulated = 0;
  const executions: SteppingExecution[] = [];
  const id = options.id ?? 'job-1';
  let input: SteppingInput | undefined = { id, run: `${id}-v1`, generation: 0, loops: 0 };
  let name = `${id}-v1`;
  const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
  while (input) {
    let next: { Name: string; Input: SteppingInput } | undefined;
    let loops = 0;
    const run = machine.run(input, {
      overrides: {
        taskResourceLocalHandlers: {
          Advance: async (given) => {
            if (JSON.stringify(given) !== JSON.stringify({ id }))
              throw new Error(`Advance was given ${JSON.stringify(given)}`);
            loops += 1;
            options.measured?.(bytes(given));
            let answer: Advanced;
            if (options.advance) {
              answer = await options.advance({ id });
              if (!answer.finished) simulated += answer.waitSeconds;
            } else {
              simulated += waitSeconds;
              answer = { finished: simulated >= hours * 3_600, waitSeconds };
            }
            const output = { id, ...answer };
            options.measured?.(bytes(output));
            return output;
          },
          ContinueAsNew: (parameters) => {
            next = parameters as unknown as { Name: string; Input: SteppingInput };
            return {};
          },
        },
        waitTimeOverrides: { Wait: 0 },
      },
      context: {
        StateMachine: { Id: stateMachineArn },
        Execution: { Id: `${stateMachineArn}:${name}`, Name: name },
      },
    });
    const events: EventLog[] = [];
    for await (const event of run.eventLogs) events.push(event as EventLog);
    await run.result;
    executions.push({ name, events: historyEventsOf(definition, events), loops });
    input = next?.Input;
    name = next?.Name ?? '';
  }
  return { executions, simulated };
}
