#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { RehearseExit, rehearse } from '../tools/rehearsal/command.ts';

/** `npm run rehearse`: run what `cdk deploy` would deploy, on this machine, before any deploy (docs/rehearsal.md). */
const port = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535)
    throw new InvalidArgumentError('a port number, 0 for any free one');
  return parsed;
};

const program = new Command('rehearse')
  .description(
    'synthesize the CDK app and run the stack from cdk.out on the local emulators, every AWS call checked against its IAM policies',
  )
  .option(
    '--cdk-out <dir>',
    'rehearse this synthesized assembly instead of synthesizing the app into cdk.out',
  )
  .option('--stack <name>', 'the stack to rehearse when the assembly has several')
  .option(
    '--serve',
    'keep the stack running for beds or by hand; stop with Ctrl-C (or SIGTERM) to get the report',
    false,
  )
  .option('--port <port>', "the API's port", port, 0)
  .option('--logs', "print every function's log lines", false)
  .option('--json', 'print the report as one JSON document', false)
  .exitOverride((error) => process.exit(error.exitCode === 0 ? RehearseExit.passed : RehearseExit.usage));
program.parse(process.argv);
const options = program.opts<{
  cdkOut?: string;
  stack?: string;
  serve: boolean;
  port: number;
  logs: boolean;
  json: boolean;
}>();

const stopRequested = new Promise<string>((resolve) => {
  process.once('SIGINT', () => resolve('SIGINT'));
  process.once('SIGTERM', () => resolve('SIGTERM'));
});
try {
  process.exitCode = await rehearse(options, {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    stopRequested,
  });
} catch (error) {
  process.stderr.write(`rehearse: ${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = RehearseExit.failed;
}
// sockets kept alive by the SDK clients of a stopped rehearsal must not hold the exit
process.exit();
