import { beforeAll, describe, expect, inject, it } from 'vitest';
import { judgeCalls, readRecords } from '../../tools/rehearsal/call-judge.ts';
import { type JudgedStack, readStack } from '../../tools/rehearsal/stack.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';

let stack: JudgedStack;

beforeAll(async () => {
  stack = readStack((await cachedSynth({ bundles: false })).cdkOut);
}, 600_000);

/**
 * Runs after the integration tests, the console tests and the beds (vitest.config.ts orders the
 * projects): every AWS call they made through the local runtime, as a row of lib/server/functions/table.ts,
 * judged against the policies the synthesized template gives that function, and every decision
 * of the embedded broker judged again by IAM's evaluator (docs/rehearsal.md).
 */
describe('the calls recorded in this run', () => {
  it('are each allowed by the policies the template gives the function that made it', async () => {
    const records = readRecords(inject('callRecords'));
    const calls = records.filter((record) => !('broker' in record));
    expect(
      calls.length,
      'no call was recorded: run the rehearsal project with the integration tests and the beds (npm test)',
    ).toBeGreaterThan(0);

    const verdict = await judgeCalls(stack, records);

    expect(verdict.findings).toEqual([]);
  });

  it('include the embedded broker’s decisions for real MQTT clients, on which IAM’s evaluator agrees', async () => {
    const records = readRecords(inject('callRecords'));
    const decisions = records.filter((record) => 'broker' in record);
    expect(
      decisions.map((record) => record.broker),
      'no broker decision was recorded: the integration tests connect real MQTT clients',
    ).toEqual(expect.arrayContaining(['iot:Connect', 'iot:Subscribe', 'iot:Receive']));

    const verdict = await judgeCalls(stack, decisions);

    expect(verdict.findings).toEqual([]);
  });
});
