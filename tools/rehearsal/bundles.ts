import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { displayName, resourcesOfType } from './assembly.ts';
import type { JudgedStack } from './stack.ts';
import { projectRoot } from './synth.ts';

/**
 * Imports each handler's module, with its function's environment, and checks it exports the
 * handler, as Lambda's runtime does at init; answers a JSON list of what failed.
 */
const loader = `
const failed = [];
const base = { ...process.env };
for (const { name, file, exported, env } of JSON.parse(process.argv[1])) {
  process.env = { ...base, ...env };
  try {
    const module = await import(file);
    const handler = module[exported] ?? module.default?.[exported];
    if (typeof handler !== 'function') failed.push(name + ': ' + file + ' exports no function ' + exported);
  } catch (error) {
    failed.push(name + ': its bundle does not load in a plain Node with only @aws-sdk/*: ' + error.message.split('\\n')[0]);
  }
}
process.stdout.write(JSON.stringify(failed));
process.exit(0);`;

/**
 * Loads each function's bundle from the assembly in a plain Node process (this one's Node 24,
 * outside the project), with the template's environment variables and only `@aws-sdk/*`
 * beside it, as the Lambda runtime offers: a bundle that imports a package it left out, a
 * handler string naming no file or export, or a module that throws at init (a variable it
 * reads that the template does not give) fails here. Answers one finding per function.
 */
export async function checkBundles(stack: JudgedStack): Promise<string[]> {
  const template = stack.assembly.template;
  const dir = mkdtempSync(join(tmpdir(), 'mesh-bundles-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(join(projectRoot, 'node_modules', '@aws-sdk'), join(dir, 'node_modules', '@aws-sdk'));
    const findings: string[] = [];
    const entries: Array<{ name: string; file: string; exported: string; env: Record<string, string> }> = [];
    for (const [id, resource] of resourcesOfType(template, 'AWS::Lambda::Function')) {
      const name = displayName(template, id);
      const asset = resource.Metadata?.['aws:asset:path'];
      if (typeof asset !== 'string') {
        findings.push(`${name}: its code is not an asset of the assembly`);
        continue;
      }
      const [base, exported] = String(resource.Properties?.Handler ?? '').split(/\.(?=[^.]+$)/);
      cpSync(join(stack.assembly.dir, asset), join(dir, id), { recursive: true });
      const file = ['.mjs', '.js', '.cjs'].map((ext) => join(dir, id, `${base}${ext}`)).find(existsSync);
      if (!file || !exported) {
        findings.push(`${name}: its handler ${resource.Properties?.Handler} names no file of its bundle`);
        continue;
      }
      try {
        const environment = resource.Properties?.Environment as { Variables?: unknown } | undefined;
        const variables = stack.references.resolve(environment?.Variables ?? {}, name) as Record<
          string,
          string
        >;
        const functionName = stack.references.identity(id)?.ref ?? id;
        const lambda = { AWS_LAMBDA_FUNCTION_NAME: functionName, LAMBDA_TASK_ROOT: join(dir, id) };
        entries.push({ name, file, exported, env: { ...lambda, ...variables } });
      } catch (error) {
        findings.push(`${name}: ${(error as Error).message}`);
      }
    }
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', loader, JSON.stringify(entries)],
      {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', AWS_REGION: stack.references.environment.region },
        timeout: 120_000,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    return [...findings, ...(JSON.parse(stdout) as string[])];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
