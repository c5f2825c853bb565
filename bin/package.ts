#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { Command } from 'commander';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import { defaultXzLevel } from '../tools/packaging/linux-packages.ts';
import { defaultOutDir, PackagingError, packageMesh } from '../tools/packaging/package.ts';
import {
  executableNamed,
  executables,
  projectRoot,
  targetNamed,
  targets,
} from '../tools/packaging/targets.ts';

/**
 * `npm run package`: `mesh-host` and `mesh` as single executables for linux-x64 and
 * linux-arm64 (no Node, no node_modules needed on the machine), a `.sha256` beside each,
 * `mesh-host.service`, and mesh-host's `.deb` and `.rpm` for each, into dist/, mesh-host with the
 * release keys it trusts built in. Exit codes: 0 built, 1 a step failed (it says which), 2 usage
 * (no release key among them).
 */
const program = new Command('package')
  .description('build the release executables, their checksums and the systemd unit')
  .option('--out <dir>', 'where to write them', defaultOutDir)
  .option('--target <name...>', `only these targets (${targets.map((target) => target.name).join(', ')})`)
  .option(
    '--executable <name...>',
    `only these (${executables.map((executable) => executable.name).join(', ')})`,
  )
  .option('--no-unit', 'do not write the systemd unit')
  .option('--no-packages', 'do not make the .deb and .rpm packages of mesh-host')
  .option('--xz-level <n>', 'xz preset of the packages, 0 (fastest) to 9 (smallest)', String(defaultXzLevel))
  .option(
    '--release-keys <keys>',
    'the release keys built into mesh-host, base64 SPKI of Ed25519 public keys separated by commas (default: MESH_RELEASE_KEYS)',
  )
  .option(
    '--sign-key <file>',
    'write each mesh-host as a release mesh agent publish takes: compressed (.br) and its manifest signed with this Ed25519 private key, PEM (default: the file MESH_RELEASE_SIGNING_KEY_FILE names)',
  )
  .option(
    '--uncompressed-release',
    'with --sign-key: releases hosts download uncompressed, for agents from before compressed releases',
    false,
  )
  .option('--json', 'print one JSON document instead of lines for people', false)
  .exitOverride((error) => process.exit(error.exitCode === 0 ? ExitCode.ok : ExitCode.usage))
  .action(
    async (options: {
      out: string;
      target?: string[];
      executable?: string[];
      unit: boolean;
      packages: boolean;
      xzLevel: string;
      releaseKeys?: string;
      signKey?: string;
      uncompressedRelease: boolean;
      json: boolean;
    }) => {
      const chosenTargets = (options.target ?? targets.map((target) => target.name)).map(
        (name) => [name, targetNamed(name)] as const,
      );
      const chosenExecutables = (options.executable ?? executables.map((executable) => executable.name)).map(
        (name) => [name, executableNamed(name)] as const,
      );
      const unknown = [...chosenTargets, ...chosenExecutables].filter(([, found]) => found === undefined);
      if (unknown.length > 0) {
        process.stderr.write(`package: unknown ${unknown.map(([name]) => name).join(', ')}\n`);
        process.exitCode = ExitCode.usage;
        return;
      }
      const xzLevel = Number(options.xzLevel);
      if (!/^[0-9]$/.test(options.xzLevel)) {
        process.stderr.write(`package: --xz-level is 0 to 9, not ${options.xzLevel}\n`);
        process.exitCode = ExitCode.usage;
        return;
      }
      const say = (line: string) => {
        if (!options.json) process.stdout.write(`${line}\n`);
      };
      // the key is read from a file a path names: never on the command line, never printed
      const signKeyFile = options.signKey ?? process.env.MESH_RELEASE_SIGNING_KEY_FILE;
      let signingKeyPem: string | undefined;
      if (signKeyFile) {
        try {
          signingKeyPem = readFileSync(signKeyFile, 'utf8');
        } catch (error) {
          process.stderr.write(
            `package: the signing key ${signKeyFile} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})\n`,
          );
          process.exitCode = ExitCode.usage;
          return;
        }
      }
      try {
        const result = await packageMesh({
          outDir: options.out,
          targets: chosenTargets.map(([, target]) => target as NonNullable<typeof target>),
          executables: chosenExecutables.map(
            ([, executable]) => executable as NonNullable<typeof executable>,
          ),
          unit: options.unit,
          packages: options.packages,
          xzLevel,
          releaseKeys: (options.releaseKeys ?? process.env.MESH_RELEASE_KEYS ?? '')
            .split(',')
            .map((key) => key.trim())
            .filter((key) => key.length > 0),
          ...(signingKeyPem ? { signingKeyPem, uncompressedRelease: options.uncompressedRelease } : {}),
          log: say,
        });
        const inProject = relative(projectRoot, result.outDir);
        const where = inProject.startsWith('..') ? result.outDir : inProject || '.';
        say(
          `done in ${result.seconds.toFixed(1)} s with Node ${result.nodeVersion}: ${result.executables.length} executables and their .sha256 files${result.packages.length > 0 ? `, ${result.packages.length} packages` : ''}${result.unit ? ' and the systemd unit' : ''} in ${where}/`,
        );
        if (options.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        // A unit systemd-analyze refused is a failure; one that could not be checked is only said.
        const verification = result.unit?.verification;
        if (verification?.outcome === 'refused' && options.json) {
          process.stderr.write(`package: systemd-analyze verify refused the unit:\n${verification.output}\n`);
        }
        process.exitCode = verification?.outcome === 'refused' ? ExitCode.failed : ExitCode.ok;
      } catch (error) {
        process.stderr.write(`package: ${(error as Error).message}\n`);
        process.exitCode = error instanceof PackagingError ? ExitCode.usage : ExitCode.failed;
      }
    },
  );

void program.parseAsync(process.argv);
