import { join } from 'node:path';
import { LocalRuntimeError } from '../../lib/runtime/errors.ts';
import { displayName } from './assembly.ts';
import { driveMesh } from './mesh-drive.ts';
import { rehearsalOperator } from './operator-signature.ts';
import { RehearsalRefused, type RunningRehearsal, startRehearsal } from './rehearsal.ts';
import { denialLine, type RehearsalReport, renderReport, reportOf } from './report.ts';
import { projectRoot, SynthFailedError, synthesize } from './synth.ts';

/** Exit codes of `npm run rehearse`, documented in docs/rehearsal.md. */
export const RehearseExit = {
  passed: 0,
  /** Something unexpected; the message says what. */
  failed: 1,
  usage: 2,
  /** A call was denied by the template's IAM policies. */
  denied: 3,
  /** The stack would fail to deploy or to run, or has parts the rehearsal cannot vouch for. */
  problems: 4,
  /** A step of the drive did not hold, or a function was never invoked. */
  drive: 5,
  synthFailed: 6,
} as const;

export type RehearseOptions = {
  /** A synthesized assembly to use; when absent the app is synthesized into cdk.out first. */
  readonly cdkOut?: string;
  readonly stack?: string;
  /** Keep the stack running (beds, by hand) instead of driving it; the report comes at the stop. */
  readonly serve: boolean;
  readonly port: number;
  readonly json: boolean;
  /** Print every function's log lines (always so with --serve). */
  readonly logs: boolean;
};

export type RehearseIo = {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Resolves when the person (or a bed) asks a serving rehearsal to stop. */
  readonly stopRequested: Promise<string>;
};

export function exitCodeOf(report: RehearsalReport): number {
  if (report.denials.length > 0) return RehearseExit.denied;
  if (report.problems.length > 0) return RehearseExit.problems;
  if (report.drive.some((step) => !step.ok)) return RehearseExit.drive;
  return RehearseExit.passed;
}

/** `npm run rehearse`: synthesize (unless given an assembly), run the stack, drive it or serve it, report. */
export async function rehearse(options: RehearseOptions, io: RehearseIo): Promise<number> {
  const started = Date.now();
  const say = (line: string) => io.err(`rehearse: ${line}`);
  let cdkOut = options.cdkOut;
  if (!cdkOut) {
    cdkOut = join(projectRoot, 'cdk.out');
    say(`synthesizing the app into ${cdkOut} (cdk synth, bundling with the local esbuild)`);
    try {
      await synthesize(cdkOut);
    } catch (error) {
      if (!(error instanceof SynthFailedError)) throw error;
      say(error.message);
      return RehearseExit.synthFailed;
    }
  }
  let rehearsal: RunningRehearsal;
  try {
    rehearsal = await startRehearsal({
      cdkOut,
      ...(options.stack ? { stackName: options.stack } : {}),
      port: options.port,
      onProgress: say,
      onLog:
        options.serve || options.logs ? (source, line) => io.err(`[${source}] ${line}`) : () => undefined,
    });
  } catch (error) {
    if (error instanceof RehearsalRefused) {
      say(error.message);
      if (options.json)
        io.out(
          JSON.stringify({
            passed: false,
            problems: error.problems.map((p) => ({ area: p.area, message: p.message })),
          }),
        );
      return RehearseExit.problems;
    }
    if (error instanceof LocalRuntimeError) {
      say(error.message);
      return RehearseExit.failed;
    }
    throw error;
  }
  rehearsal.ledger.listen({
    denied: (denial) => say(denialLine(denial)),
    problem: (problem) => say(`${problem.area}: ${problem.message}`),
  });
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  let drive: Awaited<ReturnType<typeof driveMesh>> = [];
  try {
    if (options.serve) {
      say(`ready in ${seconds()} s at ${rehearsal.url}`);
      say(
        `operator requests must be signed: MESH_API=${rehearsal.url} MESH_SIGV4_REGION=${rehearsal.environment.region} AWS_ACCESS_KEY_ID=${rehearsalOperator.accessKeyId} AWS_SECRET_ACCESS_KEY=${rehearsalOperator.secretAccessKey} npm run mesh -- status`,
      );
      for (const [logicalId, resource] of Object.entries(rehearsal.assembly.template.Resources)) {
        const identity = rehearsal.references.identity(logicalId);
        if (resource.Type === 'AWS::SQS::Queue')
          say(`queue ${displayName(rehearsal.assembly.template, logicalId)} is ${identity?.ref}`);
        if (/^AWS::DynamoDB::(Global)?Table$/.test(resource.Type))
          say(`table ${displayName(rehearsal.assembly.template, logicalId)} is ${identity?.ref}`);
      }
      say('press Ctrl-C to stop and print the report');
      say(`${await io.stopRequested} received, stopping`);
    } else {
      say(`the stack runs at ${rehearsal.url} (${seconds()} s); driving Mesh's paths through it`);
      drive = await driveMesh(rehearsal, (step) =>
        say(
          `${step.ok ? 'ok' : 'FAILED'}: ${step.name} (${(step.ms / 1000).toFixed(1)} s)${step.detail ? `: ${step.detail}` : ''}`,
        ),
      );
    }
  } finally {
    await rehearsal.stop();
  }
  const report = reportOf(rehearsal, drive);
  io.out(options.json ? JSON.stringify(report, null, 2) : renderReport(report));
  say(`done in ${seconds()} s`);
  return exitCodeOf(report);
}
