import { execFile } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The project: where cdk.json is, and the node_modules whose `@aws-sdk/*` stands in for the Lambda runtime's. */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** `cdk synth` failed; its output says why. */
export class SynthFailedError extends Error {
  override name = 'SynthFailedError';
}

/**
 * Synthesizes the app into `outdir` exactly as `npm run synth` does (the cdk CLI, cdk.json,
 * bundling with the local esbuild, cdk-nag), offline: no credentials, no lookups. The CLI and
 * the app run on this Node (24), whatever node the PATH names first.
 */
export async function synthesize(outdir: string): Promise<void> {
  const cli = join(projectRoot, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  try {
    await promisify(execFile)(
      process.execPath,
      [cli, 'synth', '--quiet', '--no-notices', '--output', outdir],
      {
        cwd: projectRoot,
        env: {
          ...process.env,
          PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
          AWS_EC2_METADATA_DISABLED: 'true',
          CDK_DISABLE_VERSION_CHECK: 'true',
          CDK_DISABLE_CLI_TELEMETRY: 'true',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
  } catch (error) {
    const {
      stdout = '',
      stderr = '',
      message,
    } = error as { stdout?: string; stderr?: string; message: string };
    throw new SynthFailedError(`cdk synth failed: ${message}\n${stdout}${stderr}`.trim());
  }
}
