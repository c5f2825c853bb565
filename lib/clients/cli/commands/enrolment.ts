import type { Command } from 'commander';
import * as z from 'zod';
import { defaultTokenTtl, tokenTtl } from '../../../server/core/enrolment/token.ts';
import type { IssuedToken, RevokedToken } from '../../../server/core/enrolment/tokens.ts';
import { nodeName } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, usage } from '../command-context.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { assertSecretFileFree, SecretFileExistsError, writeSecretFile } from '../secret-file.ts';
import { issueUnenrolled } from './unenrolled-tokens.ts';

/** Registers `mesh token issue NODE [--ttl 24h]` and `mesh token revoke NODE`. */
export function registerEnrolmentCommands(program: Command): void {
  const token = program.command('token').description("issue or revoke a node's one-time enrolment token");

  token
    .command('issue')
    .description('issue a token for NODE (replacing any earlier one) and print it once, or write it to FILE')
    .argument('[node]', 'the node the token enrols')
    .option('--ttl <duration>', 'how long the token stays valid: 90s, 15m, 24h, 7d', defaultTokenTtl)
    .option('--out <file>', 'write the token to FILE (mode 0600, created anew) instead of printing it')
    .option('--force', 'with --out: replace FILE if it exists', false)
    .option(
      '--unenrolled',
      'without NODE: a token for every node not enrolled whose token is missing or lapsed',
    )
    .option('--out-dir <dir>', 'with --unenrolled: where the token files go, DIR/NODE.token (mode 0600)')
    .action(
      action(
        async (
          { api, output },
          rawNode: string | undefined,
          options: { ttl: string; out?: string; force: boolean; unenrolled?: boolean; outDir?: string },
        ) => {
          if (options.unenrolled || options.outDir !== undefined) {
            if (rawNode !== undefined || !options.unenrolled || options.outDir === undefined || options.out) {
              output.say(cliLines.usage, {
                argument: '--unenrolled',
                problem: 'write it as mesh token issue --unenrolled --out-dir DIR, without NODE or --out',
              });
              return ExitCode.usage;
            }
            const ttl = tokenTtl.safeParse(options.ttl);
            if (!ttl.success) return usage(output, ttl.error);
            return issueUnenrolled(api, output, {
              outDir: options.outDir,
              ttl: options.ttl,
              force: options.force,
            });
          }
          const parsed = z
            .object({ node: nodeName, ttl: tokenTtl })
            .safeParse({ node: rawNode, ttl: options.ttl });
          if (!parsed.success) return usage(output, parsed.error);
          if (options.out !== undefined) {
            const refused = await refuseTakenFile(output, options.out, options.force);
            if (refused !== undefined) return refused;
          }
          const issued = await api.call<IssuedToken>('POST', `/nodes/${parsed.data.node}/token`, {
            ttl: options.ttl,
          });
          const valid = `valid until ${issued.expiresAt}${issued.replaced ? `; it replaces token ${issued.replaced}, which no longer works` : ''}`;
          if (options.out === undefined) {
            output.result(issued);
            output.line(issued.token);
            output.say(cliLines.tokenShownOnce, { node: issued.node, valid });
            return ExitCode.ok;
          }
          const { token: _shownNowhere, ...described } = issued;
          const file = await writeSecretFile(options.out, `${issued.token}\n`, options.force);
          output.result({ ...described, tokenFile: file });
          output.line(`wrote the token for ${issued.node} to ${file} (mode 0600), ${valid}`);
          output.say(cliLines.tokenFileNext, { node: issued.node, file });
          return ExitCode.ok;
        },
      ),
    );

  token
    .command('revoke')
    .description("revoke NODE's token so it cannot enrol")
    .argument('<node>', 'the node whose token is revoked')
    .action(
      action(async ({ api, output }, rawNode: string) => {
        const parsed = nodeName.safeParse(rawNode);
        if (!parsed.success) return usage(output, parsed.error);
        const revoked = await api.call<RevokedToken>('DELETE', `/nodes/${parsed.data}/token`);
        output.result(revoked);
        output.line(
          `revoked token ${revoked.tokenId} of ${revoked.node}; issue a new one to enrol ${revoked.node}`,
        );
        return ExitCode.ok;
      }),
    );
}

/** FILE exists and --force was not given: refused before a token is issued, so none is replaced. */
async function refuseTakenFile(output: Output, file: string, force: boolean): Promise<ExitCode | undefined> {
  try {
    await assertSecretFileFree(file, force);
    return undefined;
  } catch (error) {
    if (!(error instanceof SecretFileExistsError)) throw error;
    output.say(cliLines.fileExists, { reason: error.message });
    if (output.json) output.result({ error: { code: 'file_exists', message: error.message } });
    return ExitCode.usage;
  }
}
