import type { Command } from 'commander';
import { buildInfo } from '../../common/build-info.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { defaultHostDir } from '../keys.ts';
import { builtInReleaseKeys, releaseKeyFingerprint } from '../release-keys.ts';
import { trustedKeys } from '../release-slots.ts';
import { defaultTrialBoundMs, superviseAgent } from '../supervisor.ts';

/**
 * `mesh-host supervise [--dir DIR] [--trial-bound S] -- run …`: runs `mesh-host run …` (the
 * current release, or this executable while none is), tries a release once it is installed, and
 * rolls it back when it exits or does not report within the bound (supervisor.ts).
 */
export function registerSuperviseCommand(program: Command): void {
  program
    .command('supervise')
    .description('run the agent, try each new release and roll it back when it does not report in time')
    .option('--dir <dir>', 'the data folder: the releases are kept in DIR/agent', defaultHostDir)
    .option(
      '--trial-bound <seconds>',
      'how long a new release has to report',
      String(defaultTrialBoundMs / 1000),
    )
    .argument('<args...>', 'what the agent runs with, after --: run --dir … --apply …')
    .action(async (args: string[], options: { dir: string; trialBound: string }) => {
      const seconds = Number(options.trialBound);
      if (!Number.isFinite(seconds) || seconds < 1 || seconds > 3600) {
        process.stderr.write(`mesh-host: --trial-bound is 1 to 3600 seconds, not ${options.trialBound}\n`);
        process.exit(ExitCode.usage);
      }
      const say = (line: string) => process.stderr.write(`mesh-host supervise: ${line}\n`);
      const trusted = await trustedKeys(options.dir, builtInReleaseKeys());
      say(
        trusted.length === 0
          ? 'no release key is built in: every release is refused'
          : `trusting release keys ${trusted.map(releaseKeyFingerprint).join(', ')}`,
      );
      const controller = new AbortController();
      for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => controller.abort());
      const code = await superviseAgent({
        dir: options.dir,
        args,
        installed: process.execPath,
        // run from the tree, the installed agent is Node running this script
        ...(buildInfo().build === 'source'
          ? { installedArgs: [...process.execArgv, process.argv[1] as string] }
          : {}),
        trialBoundMs: seconds * 1000,
        say,
        signal: controller.signal,
      });
      process.exit(code);
    });
}
