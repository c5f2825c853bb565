import { type Command, Option } from 'commander';
import * as z from 'zod';
import { moduleName, nodeName } from '../../server/core/names.ts';
import { rolePolicyNames } from '../../server/core/roles.ts';
import { ExitCode, exitCodeForStatus } from '../common/exit-codes.ts';
import {
  ApiClient,
  type ApiProblemError,
  ApiUnreachableError,
  type RequestSigner,
} from '../http/api-client.ts';
import { sigv4SignerFor } from '../http/sigv4.ts';
import { makeOutput, type Output } from './output.ts';
import { cliLines } from './output-lines.ts';
import { roleNeededFromTable } from './role-needed.ts';

/** What every `mesh` command gets: the API, the output, and one way to finish. */
export type CommandContext = {
  readonly api: ApiClient;
  readonly output: Output;
};

const defaultApiUrl = 'http://127.0.0.1:4600';

/** Chooses the signer for an API URL; set by the SigV4 module for execute-api URLs. */
let signerFor: (url: string) => RequestSigner | undefined = () => undefined;
export function setSignerFactory(factory: (url: string) => RequestSigner | undefined) {
  signerFor = factory;
}

/** Makes `mesh` sign its requests (MESH_SIGV4_REGION: sign any URL for that region); called once by bin/mesh.ts. */
export function registerSigV4Signer(env: NodeJS.ProcessEnv = process.env): void {
  const signingRegion = env.MESH_SIGV4_REGION || undefined;
  setSignerFactory((url) => sigv4SignerFor(url, signingRegion ? { signingRegion } : {}));
}

export function addGlobalOptions(program: Command): Command {
  return program
    .addOption(
      new Option('--api <url>', 'the control plane: the local runtime, or a deployed stack URL')
        .env('MESH_API')
        .default(defaultApiUrl),
    )
    .option('--json', 'print one JSON document for scripts instead of lines for people', false);
}

function contextFrom(command: Command): CommandContext {
  const options = command.optsWithGlobals<{ api: string; json: boolean }>();
  const signer = signerFor(options.api);
  return {
    api: new ApiClient(options.api, { roleNeeded: roleNeededFromTable, ...(signer ? { signer } : {}) }),
    output: makeOutput(Boolean(options.json)),
  };
}

/**
 * Runs a command's body and turns its failure into a message and an exit code, here and
 * nowhere else.
 */
export function action<Args extends unknown[]>(
  body: (context: CommandContext, ...args: Args) => Promise<ExitCode | undefined>,
) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const context = contextFrom(command);
    try {
      process.exitCode = (await body(context, ...(args.slice(0, -1) as Args))) ?? ExitCode.ok;
    } catch (error) {
      process.exitCode = reportFailure(context.output, error);
    }
  };
}

function reportFailure(output: Output, error: unknown): ExitCode {
  if (error instanceof ApiUnreachableError) {
    output.say(cliLines.unreachable, { reason: error.message });
    if (output.json) output.result({ error: { code: 'unreachable', message: error.message } });
    return ExitCode.unavailable;
  }
  if ((error as ApiProblemError).name === 'ApiProblemError') {
    const problem = error as ApiProblemError;
    const refused = { reason: problem.code, status: problem.status, detail: problem.message };
    if (problem.needs)
      output.say(cliLines.roleNeeded, {
        ...refused,
        role: rolePolicyNames[problem.needs.role],
        route: problem.needs.route,
      });
    else output.say(cliLines.refused, refused);
    if (output.json)
      output.result({
        error: {
          code: problem.code,
          message: problem.message,
          status: problem.status,
          ...(problem.needs ? { role: rolePolicyNames[problem.needs.role] } : {}),
        },
      });
    return exitCodeForStatus(problem.status);
  }
  output.say(cliLines.failed, { reason: (error as Error).message ?? String(error) });
  return ExitCode.failed;
}

/** A command line the schemas refuse: one line for people, one JSON document under --json. */
export function usage(output: Output, error: z.ZodError): ExitCode {
  const message = error.issues.map((issue) => issue.message).join('; ');
  output.say(cliLines.usage, { problem: message });
  if (output.json) output.result({ error: { code: 'usage', message } });
  return ExitCode.usage;
}

/** `NODE/MODULE` on the command line. */
export const nodeModuleArgument = z
  .string()
  .transform((value) => value.split('/'))
  .pipe(z.tuple([nodeName, moduleName], { message: 'write it as NODE/MODULE' }))
  .transform(([node, module]) => ({ node, module }));
