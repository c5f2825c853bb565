import type { Command } from 'commander';
import * as z from 'zod';
import { defaultTokenTtl, tokenTtl } from '../../core/enrolment/token.ts';
import type { IssuedToken, RevokedToken } from '../../core/enrolment/tokens.ts';
import { nodeName } from '../../core/names.ts';
import { action } from '../command-context.ts';
import { ExitCode } from '../exit-codes.ts';

/** Registers `mesh token issue NODE [--ttl 24h]` and `mesh token revoke NODE`. */
export function registerEnrolmentCommands(program: Command): void {
  const token = program.command('token').description("issue or revoke a node's one-time enrolment token");

  token
    .command('issue')
    .description('issue a token for NODE (replacing any earlier one) and print it once')
    .argument('<node>', 'the node the token enrols')
    .option('--ttl <duration>', 'how long the token stays valid: 90s, 15m, 24h, 7d', defaultTokenTtl)
    .action(
      action(async ({ api, output }, rawNode: string, options: { ttl: string }) => {
        const parsed = z
          .object({ node: nodeName, ttl: tokenTtl })
          .safeParse({ node: rawNode, ttl: options.ttl });
        if (!parsed.success) return usage(output, parsed.error);
        const issued = await api.call<IssuedToken>('POST', `/nodes/${parsed.data.node}/token`, {
          ttl: options.ttl,
        });
        output.result(issued);
        output.line(issued.token);
        output.progress(
          `issued a token for ${issued.node}, valid until ${issued.expiresAt}` +
            (issued.replaced ? `; it replaces token ${issued.replaced}, which no longer works` : '') +
            `. It is shown only this once: run mesh-host enrol --node ${issued.node} --token … on the node.`,
        );
        return ExitCode.ok;
      }),
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

function usage(
  output: { error(text: string): void; json: boolean; result(v: unknown): void },
  error: z.ZodError,
) {
  const message = error.issues.map((issue) => issue.message).join('; ');
  output.error(`mesh: ${message}`);
  if (output.json) output.result({ error: { code: 'usage', message } });
  return ExitCode.usage;
}
