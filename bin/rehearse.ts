#!/usr/bin/env node
import { Command } from 'commander';
import { RehearseExit, rehearse } from '../tools/rehearsal/command.ts';

/**
 * `npm run rehearse`: the synthesized stack checked against the code (the function table, the
 * flow, the consumer, every bundle), and calls recorded on the local runtime judged against its
 * IAM policies (docs/rehearsal.md).
 */
const program = new Command('rehearse')
  .description(
    'synthesize the CDK app, check the template against the code and load every bundle; with --calls, judge recorded AWS calls against its IAM policies',
  )
  .option('--cdk-out <dir>', 'check this synthesized assembly instead of synthesizing the app')
  .option('--calls <dir>', 'judge the calls recorded in this folder (MESH_CALL_RECORD=<dir> when they ran)')
  .option('--json', 'print the report as one JSON document', false)
  .exitOverride((error) => process.exit(error.exitCode === 0 ? RehearseExit.passed : RehearseExit.usage));
program.parse(process.argv);
const options = program.opts<{ cdkOut?: string; calls?: string; json: boolean }>();

try {
  process.exitCode = await rehearse(options, {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  });
} catch (error) {
  process.stderr.write(`rehearse: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = RehearseExit.failed;
}
