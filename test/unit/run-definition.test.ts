import { StateMachine } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { runDefinition, UnsupportedDefinitionError } from '../../lib/server/flows/run-definition.ts';

/** A flow shaped as the push's: a Task, a loop of a Choice and a Map of Tasks, a Pass that picks. */
const looping = {
  StartAt: 'Count',
  States: {
    Count: { Type: 'Task', Resource: 'arn:aws:lambda:us-east-1:000000000000:function:count', Next: 'Enough' },
    Enough: {
      Type: 'Choice',
      Choices: [{ Variable: '$.done', BooleanEquals: true, Next: 'Done' }],
      Default: 'Each',
    },
    Each: {
      Type: 'Map',
      ItemsPath: '$.items',
      ItemSelector: { 'item.$': '$$.Map.Item.Value', 'round.$': '$.round' },
      MaxConcurrency: 2,
      ItemProcessor: {
        ProcessorConfig: { Mode: 'INLINE' },
        StartAt: 'Double',
        States: {
          Double: {
            Type: 'Task',
            Resource: 'arn:aws:lambda:us-east-1:000000000000:function:double',
            End: true,
          },
        },
      },
      ResultPath: '$.results',
      Next: 'Count',
    },
    Done: {
      Type: 'Pass',
      Parameters: { 'total.$': '$.total', 'rounds.$': '$.round', fixed: 'yes' },
      End: true,
    },
  },
} as const;

const tasks = () => {
  let inFlight = 0;
  let most = 0;
  return {
    most: () => most,
    functions: {
      Count: async (input: unknown) => {
        const state = input as { round?: number; total?: number; results?: number[] };
        const round = (state.round ?? 0) + 1;
        const total = (state.total ?? 0) + (state.results ?? []).reduce((sum, value) => sum + value, 0);
        return { round, total, done: round > 3, items: [1, 2, 3, 4, 5].map((n) => n * round) };
      },
      Double: async (input: unknown) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 1));
        inFlight -= 1;
        return (input as { item: number }).item * 2;
      },
    },
  };
};

describe('runDefinition, a flow’s order run in-process', () => {
  it('answers what aws-local-stepfunctions answers on the same definition, with Map’s concurrency held', async () => {
    const ours = tasks();
    const theirs = tasks();

    const inProcess = await runDefinition(looping, ours.functions, {});
    const interpreted = await new StateMachine(looping as never, {
      validationOptions: { checkArn: false },
    }).run(
      {},
      {
        overrides: {
          taskResourceLocalHandlers: { Count: theirs.functions.Count, Double: theirs.functions.Double },
        },
      },
    ).result;

    expect(inProcess).toEqual(interpreted);
    expect(inProcess).toEqual({ total: 180, rounds: 4, fixed: 'yes' });
    expect(ours.most()).toBe(2);
  });

  it('retries a Task’s named error as its Retry says, then lets it go', async () => {
    const definition = {
      StartAt: 'Flaky',
      States: {
        Flaky: {
          Type: 'Task',
          Resource: 'arn:aws:lambda:us-east-1:000000000000:function:flaky',
          Retry: [
            { ErrorEquals: ['StoreUnavailableError'], IntervalSeconds: 1, MaxAttempts: 2, BackoffRate: 2 },
          ],
          End: true,
        },
      },
    };
    const failing = (times: number) => {
      let calls = 0;
      return {
        calls: () => calls,
        Flaky: async () => {
          calls += 1;
          if (calls <= times) throw Object.assign(new Error('away'), { name: 'StoreUnavailableError' });
          return 'ok';
        },
      };
    };
    const twice = failing(2);
    expect(await runDefinition(definition, { Flaky: twice.Flaky }, {}, { retryIntervalMs: 0 })).toBe('ok');
    expect(twice.calls()).toBe(3);

    const thrice = failing(3);
    await expect(
      runDefinition(definition, { Flaky: thrice.Flaky }, {}, { retryIntervalMs: 0 }),
    ).rejects.toMatchObject({
      name: 'StoreUnavailableError',
    });
    expect(thrice.calls()).toBe(3);

    const other = {
      Flaky: async () => {
        throw Object.assign(new Error('bad'), { name: 'PushUsageError' });
      },
    };
    await expect(runDefinition(definition, other, {}, { retryIntervalMs: 0 })).rejects.toMatchObject({
      name: 'PushUsageError',
    });
  });

  it('refuses by name what it does not run, rather than running it otherwise', async () => {
    const one = (state: { readonly Type: string; readonly [field: string]: unknown }) => ({
      StartAt: 'S',
      States: { S: { ...(state.Type === 'Task' ? { Resource: 'arn' } : {}), End: true, ...state } },
    });
    const cases = [
      one({ Type: 'Wait', Seconds: 1 }),
      one({ Type: 'Task', ResultSelector: { 'a.$': '$' } }),
      one({ Type: 'Task', Catch: [] }),
      one({ Type: 'Pass', Parameters: { 'a.$': '$.list[0]' } }),
      {
        StartAt: 'C',
        States: {
          C: { Type: 'Choice', Choices: [{ Variable: '$.n', NumericEquals: 1, Next: 'P' }], Default: 'P' },
          P: { Type: 'Pass', End: true },
        },
      },
    ];
    for (const definition of cases) {
      await expect(
        runDefinition(definition, { S: async () => ({}) }, { n: 1, list: [1] }),
      ).rejects.toBeInstanceOf(UnsupportedDefinitionError);
    }
  });

  it('fails as Step Functions does when a path selects nothing', async () => {
    const definition = {
      StartAt: 'P',
      States: { P: { Type: 'Pass', Parameters: { 'a.$': '$.missing' }, End: true } },
    };
    await expect(runDefinition(definition, {}, {})).rejects.toMatchObject({ name: 'States.Runtime' });
  });
});
