import { mapLimit } from '../core/map-limit.ts';

/**
 * Runs a state machine definition in-process, for what must follow a flow's order without
 * starting it: a push's plan, which runs the push's own steps on a store that writes nowhere,
 * inside a Lambda: aws-local-stepfunctions, bundled, would add about 380 KB to a function of
 * about 500 KB (docs/deploy.md, "bundle"). It reads only what our
 * definitions use (Task, Choice on a boolean, an inline Map whose ResultPath may be null, Pass with Parameters, Retry, JSONPath
 * `$.a.b` and `$$.Map.Item.Value`) and refuses anything else by name, so a definition that
 * outgrows it fails the plan's tests, not a plan in use. The local runtime runs the same files on
 * aws-local-stepfunctions (lib/local/local-push-flow.ts); test/unit/run-definition.test.ts holds
 * the two to the same outcomes.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type State = { readonly Type: string; readonly [field: string]: unknown };
type Definition = { readonly StartAt: string; readonly States: Readonly<Record<string, State>> };
type Retrier = {
  readonly ErrorEquals: readonly string[];
  readonly IntervalSeconds?: number;
  readonly MaxAttempts?: number;
  readonly BackoffRate?: number;
};

/** A Task's function, by state name: takes the state's input, answers its result. */
export type TaskFunctions = Readonly<Record<string, (input: unknown) => Promise<unknown>>>;

export class UnsupportedDefinitionError extends Error {
  override name = 'UnsupportedDefinitionError';
}

const known: Readonly<Record<string, readonly string[]>> = {
  Task: ['Type', 'Comment', 'Resource', 'Retry', 'Next', 'End'],
  Choice: ['Type', 'Comment', 'Choices', 'Default'],
  Map: [
    'Type',
    'Comment',
    'ItemsPath',
    'ItemSelector',
    'MaxConcurrency',
    'ItemProcessor',
    'ResultPath',
    'Next',
    'End',
  ],
  Pass: ['Type', 'Comment', 'Parameters', 'Next', 'End'],
};

function refuseUnknown(name: string, state: State) {
  const fields = known[state.Type];
  if (!fields)
    throw new UnsupportedDefinitionError(`state ${name}: type ${state.Type} is not run in-process`);
  const extra = Object.keys(state).filter((field) => !fields.includes(field));
  if (extra.length > 0)
    throw new UnsupportedDefinitionError(`state ${name}: ${extra.join(', ')} is not run in-process`);
}

/** `$`, `$.a.b` against the state's input, `$$.Map.Item.Value` against the context. */
function read(path: string, input: Json, context: { readonly item?: Json }): Json {
  if (path === '$$.Map.Item.Value') {
    if (context.item === undefined) throw new UnsupportedDefinitionError(`${path} outside a Map`);
    return context.item;
  }
  if (!/^\$(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(path))
    throw new UnsupportedDefinitionError(`path ${path} is not run in-process`);
  let value: Json | undefined = input;
  for (const key of path.split('.').slice(1)) {
    value = value !== null && typeof value === 'object' && !Array.isArray(value) ? value[key] : undefined;
    // As Step Functions: a path that selects nothing fails the execution (States.Runtime).
    if (value === undefined)
      throw Object.assign(new Error(`${path} selects nothing`), { name: 'States.Runtime' });
  }
  return value;
}

function selected(template: unknown, input: Json, context: { readonly item?: Json }): Json {
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(template as Record<string, unknown>)) {
    if (key.endsWith('.$')) out[key.slice(0, -2)] = read(String(value), input, context);
    else out[key] = value as Json;
  }
  return out;
}

function placed(input: Json, resultPath: unknown, result: Json): Json {
  if (resultPath === undefined || resultPath === '$') return result;
  // As Step Functions: a null ResultPath drops the result and passes the input on.
  if (resultPath === null) return input;
  const match = /^\$\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(String(resultPath));
  if (!match?.[1])
    throw new UnsupportedDefinitionError(`ResultPath ${String(resultPath)} is not run in-process`);
  return { ...(input as Record<string, Json>), [match[1]]: result };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withRetry(
  retriers: readonly Retrier[],
  call: () => Promise<unknown>,
  retryIntervalMs: number | undefined,
): Promise<unknown> {
  const attempts = new Map<Retrier, number>();
  for (;;) {
    try {
      return await call();
    } catch (error) {
      const name = (error as Error).name;
      const retrier = retriers.find(
        (r) => r.ErrorEquals.includes(name) || r.ErrorEquals.includes('States.ALL'),
      );
      const made = retrier ? (attempts.get(retrier) ?? 0) : 0;
      if (!retrier || made >= (retrier.MaxAttempts ?? 3)) throw error;
      attempts.set(retrier, made + 1);
      const wait = (retrier.IntervalSeconds ?? 1) * 1000 * (retrier.BackoffRate ?? 2) ** made;
      await sleep(retryIntervalMs ?? wait);
    }
  }
}

/**
 * Runs `definition` from its StartAt with `input`, each Task calling `tasks[stateName]`, and
 * answers the last state's output. JSON goes in and out of every Task, as across Lambda.
 */
export async function runDefinition(
  definition: Definition,
  tasks: TaskFunctions,
  input: unknown,
  options: { readonly retryIntervalMs?: number } = {},
): Promise<unknown> {
  const asJson = (value: unknown): Json => JSON.parse(JSON.stringify(value ?? null));
  const run = async (machine: Definition, start: Json, context: { readonly item?: Json }): Promise<Json> => {
    let name: string | undefined = machine.StartAt;
    let data = start;
    while (name !== undefined) {
      const state: State | undefined = machine.States[name];
      if (!state) throw new UnsupportedDefinitionError(`no state ${name}`);
      refuseUnknown(name, state);
      const stateName: string = name;
      if (state.Type === 'Task') {
        const task = tasks[stateName];
        if (!task) throw new UnsupportedDefinitionError(`no function for Task ${stateName}`);
        const given = data;
        data = asJson(
          await withRetry(
            (state.Retry ?? []) as Retrier[],
            () => task(asJson(given)),
            options.retryIntervalMs,
          ),
        );
      } else if (state.Type === 'Choice') {
        const choices = state.Choices as ReadonlyArray<Record<string, unknown>>;
        const taken = choices.find((choice) => {
          const fields = Object.keys(choice).sort().join(',');
          if (fields !== 'BooleanEquals,Next,Variable')
            throw new UnsupportedDefinitionError(
              `state ${stateName}: a choice of ${fields} is not run in-process`,
            );
          return read(String(choice.Variable), data, context) === choice.BooleanEquals;
        });
        name = String(taken ? taken.Next : state.Default);
        continue;
      } else if (state.Type === 'Map') {
        const processor = state.ItemProcessor as Definition & { ProcessorConfig?: { Mode?: string } };
        if ((processor.ProcessorConfig?.Mode ?? 'INLINE') !== 'INLINE')
          throw new UnsupportedDefinitionError(`state ${stateName}: only an inline Map is run in-process`);
        const items = read(String(state.ItemsPath ?? '$'), data, context);
        if (!Array.isArray(items))
          throw Object.assign(new Error(`${stateName}: items are not a list`), { name: 'States.Runtime' });
        const outer = data;
        const results = await mapLimit(
          items,
          Number(state.MaxConcurrency ?? 0) || items.length || 1,
          (item) =>
            run(processor, state.ItemSelector ? selected(state.ItemSelector, outer, { item }) : item, {
              item,
            }),
        );
        data = placed(data, state.ResultPath, results);
      } else if (state.Type === 'Pass') {
        if (state.Parameters) data = selected(state.Parameters, data, context);
      }
      name = state.End === true ? undefined : (state.Next as string | undefined);
      if (name === undefined && state.End !== true)
        throw new UnsupportedDefinitionError(`state ${stateName} has neither Next nor End`);
    }
    return data;
  };
  return run(definition, asJson(input), {});
}
