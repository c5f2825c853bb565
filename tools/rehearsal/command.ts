import { checkBundles } from './bundles.ts';
import { judgeCalls, readRecords } from './call-judge.ts';
import { RehearsalProblem } from './problems.ts';
import { readStack } from './stack.ts';
import { cachedSynth, SynthFailedError } from './synth.ts';
import { checkTemplate } from './template-checks.ts';

/** Exit codes of `npm run rehearse`, documented in docs/rehearsal.md. */
export const RehearseExit = {
  passed: 0,
  /** Something unexpected; the message says what. */
  failed: 1,
  usage: 2,
  /** A recorded call the template's policies deny, or a broker decision IAM's evaluator does not share. */
  denied: 3,
  /** The template disagrees with the function table, the flow or the consumer, or a bundle does not load. */
  problems: 4,
  /** --calls names a folder with no recorded call: nothing was judged. */
  nothingRecorded: 5,
  synthFailed: 6,
} as const;

export type RehearseOptions = {
  /** A synthesized assembly to check; when absent the app is synthesized (or taken from the synth cache). */
  readonly cdkOut?: string;
  /** A folder of calls recorded with MESH_CALL_RECORD, to judge against the template. */
  readonly calls?: string;
  readonly json: boolean;
};

export type RehearseReport = {
  readonly cdkOut: string;
  readonly template: readonly string[];
  readonly bundles: readonly string[];
  readonly calls?: Awaited<ReturnType<typeof judgeCalls>>;
};

/** `npm run rehearse`: the synthesized stack checked against the code, and recorded calls judged against it. */
export async function rehearse(
  options: RehearseOptions,
  io: { readonly out: (text: string) => void; readonly err: (text: string) => void },
): Promise<number> {
  const say = (line: string) => io.err(`rehearse: ${line}`);
  let cdkOut = options.cdkOut;
  if (!cdkOut) {
    say('synthesizing the app (cdk synth with bundling), or taking the synthesis of the same inputs');
    try {
      cdkOut = (await cachedSynth()).cdkOut;
    } catch (error) {
      if (!(error instanceof SynthFailedError)) throw error;
      say(error.message);
      return RehearseExit.synthFailed;
    }
  }
  say(`checking ${cdkOut}`);
  let report: RehearseReport;
  try {
    const stack = readStack(cdkOut);
    const template = await checkTemplate(stack);
    say('loading every bundle in a plain Node');
    const bundles = await checkBundles(stack);
    const records = options.calls ? readRecords(options.calls) : undefined;
    if (records) say(`judging ${records.length} recorded calls and broker decisions from ${options.calls}`);
    const calls = records ? await judgeCalls(stack, records) : undefined;
    report = { cdkOut, template, bundles, ...(calls ? { calls } : {}) };
  } catch (error) {
    if (!(error instanceof RehearsalProblem)) throw error;
    say(`${error.area}: ${error.message}`);
    return RehearseExit.problems;
  }
  io.out(options.json ? JSON.stringify(report, null, 2) : rendered(report));
  if (report.calls && report.calls.findings.length > 0) return RehearseExit.denied;
  if (report.template.length + report.bundles.length > 0) return RehearseExit.problems;
  if (report.calls && report.calls.calls + report.calls.brokerDecisions === 0)
    return RehearseExit.nothingRecorded;
  return RehearseExit.passed;
}

function rendered(report: RehearseReport): string {
  const section = (title: string, lines: readonly string[]) =>
    `${title}: ${lines.length === 0 ? 'ok' : `${lines.length} finding(s)\n  ${lines.join('\n  ')}`}`;
  const lines = [
    section('template against lib/server/functions/table.ts, the flow and the consumer', report.template),
    section('bundles loaded in a plain Node', report.bundles),
  ];
  if (report.calls) {
    const { calls, brokerDecisions, findings, silent } = report.calls;
    lines.push(section(`${calls} calls and ${brokerDecisions} broker decisions judged`, findings));
    if (silent.length > 0) lines.push(`functions no recorded call was made as: ${silent.join(', ')}`);
  }
  return lines.join('\n');
}
