import type { Command } from 'commander';
import * as z from 'zod';
import { ExitCode } from '../../common/exit-codes.ts';
import { problemError } from '../../http/api-client.ts';
import { action, usage } from '../command-context.ts';
import { startConsoleProxy } from '../console/proxy.ts';
import { cliLines } from '../output-lines.ts';

/**
 * `mesh console`: the console for the control plane at --api, on 127.0.0.1, its reads signed
 * like every other `mesh` command (SigV4 for a deployed stack). Runs until Ctrl-C.
 */
export function registerConsoleCommand(program: Command): void {
  program
    .command('console')
    .description('serve the read-only console on 127.0.0.1, forwarding its reads to --api, signed')
    .option('--port <port>', 'the local port (0 for any free one)', '4610')
    .option('--refresh <seconds>', 'how often the page reads the mesh again', '15')
    .action(
      action(async ({ api, output }, options: { port: string; refresh: string }) => {
        const parsed = z
          .object({
            port: z.coerce.number().int().min(0, 'a port is 0 to 65535').max(65535, 'a port is 0 to 65535'),
            refresh: z.coerce.number().int().min(1, 'refresh at least every second').max(3600),
          })
          .safeParse(options);
        if (!parsed.success) return usage(output, parsed.error);
        // One signed read first, so missing credentials or permissions are said here, once.
        const probe = await api.send('GET', '/pushes?limit=1');
        if (probe.status >= 400) throw problemError(probe);
        const proxy = await startConsoleProxy({
          port: parsed.data.port,
          settings: { refreshSeconds: parsed.data.refresh, source: api.baseUrl },
          forward: (path) => api.send('GET', path),
        });
        output.result({ console: `${proxy.url}/console`, api: api.baseUrl });
        output.line(`mesh console: ${proxy.url}/console, reading ${api.baseUrl}; Ctrl-C stops it`);
        const signal = await new Promise<string>((resolve) => {
          process.once('SIGINT', () => resolve('SIGINT'));
          process.once('SIGTERM', () => resolve('SIGTERM'));
        });
        await proxy.stop();
        output.say(cliLines.consoleStopped, { signal });
        return ExitCode.ok;
      }),
    );
}
