import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import type { CfnTemplate } from '../../tools/rehearsal/assembly.ts';
import { RehearseExit } from '../../tools/rehearsal/command.ts';
import type { RehearsalReport } from '../../tools/rehearsal/report.ts';

const root = join(import.meta.dirname, '../..');
const cdkOut = inject('rehearsalCdkOut');
const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/** `npm run rehearse -- --cdk-out ASSEMBLY --json`: its exit code, what it said on stderr, its report. */
async function rehearse(assembly: string) {
  const child = spawn(process.execPath, [join(root, 'bin/rehearse.ts'), '--cdk-out', assembly, '--json'], {
    cwd: root,
  });
  let stdout = '';
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output, report: JSON.parse(stdout || '{}') as RehearsalReport };
}

/** A copy of the synthesized assembly whose template `change` rewrote; the bundles are shared, not copied. */
function changedAssembly(change: (template: CfnTemplate) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-rehearsal-changed-'));
  copies.push(dir);
  for (const entry of readdirSync(cdkOut)) {
    if (entry.startsWith('asset.')) symlinkSync(join(cdkOut, entry), join(dir, entry));
    else cpSync(join(cdkOut, entry), join(dir, entry), { recursive: true });
  }
  const templateFile = readdirSync(dir).find((entry) => entry.endsWith('.template.json')) as string;
  const template = JSON.parse(readFileSync(join(dir, templateFile), 'utf8')) as CfnTemplate;
  change(template);
  writeFileSync(join(dir, templateFile), JSON.stringify(template));
  return dir;
}

type Statement = { Action: string | string[] };
const idOf = (value: unknown) => {
  const reference = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  return reference.Ref ?? reference['Fn::GetAtt']?.[0];
};

/** The identity policy statements of the role of the function the queue's event source feeds. */
function consumerStatements(template: CfnTemplate): Statement[] {
  const resources = Object.values(template.Resources);
  const mapping = resources.find((resource) => resource.Type === 'AWS::Lambda::EventSourceMapping');
  const fn = template.Resources[idOf(mapping?.Properties?.FunctionName) as string];
  const role = idOf(fn?.Properties?.Role);
  return resources
    .filter((resource) => resource.Type === 'AWS::IAM::Policy')
    .filter((policy) => ((policy.Properties?.Roles ?? []) as unknown[]).some((entry) => idOf(entry) === role))
    .flatMap(
      (policy) =>
        (policy.Properties?.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement ?? [],
    );
}

describe('npm run rehearse', () => {
  it('runs the synthesized stack whole: every function invoked, every drive step held, no call denied', async () => {
    const { code, output, report } = await rehearse(cdkOut);

    expect(code, output).toBe(RehearseExit.passed);
    expect(report.passed).toBe(true);
    expect(report.denials).toEqual([]);
    expect(report.problems).toEqual([]);
    expect(report.drive.filter((step) => !step.ok)).toEqual([]);
    expect(report.functions.length).toBeGreaterThan(0);
    expect(report.functions.filter((fn) => fn.invocations === 0)).toEqual([]);
    const consumer = report.functions.find((fn) => fn.calls['sqs:ReceiveMessage']);
    expect(consumer?.calls).toMatchObject({
      'sqs:ChangeMessageVisibility': expect.any(Number),
      'states:StartSyncExecution': expect.any(Number),
    });
  });

  it('fails on a permission taken away, naming the function, the action and the resource', async () => {
    const assembly = changedAssembly((template) => {
      for (const statement of consumerStatements(template))
        statement.Action = [statement.Action]
          .flat()
          .filter((action) => action !== 'sqs:ChangeMessageVisibility');
    });

    const { code, output, report } = await rehearse(assembly);

    expect(code, output).toBe(RehearseExit.denied);
    expect(output).toMatch(
      /denied: Functions\/ControlConsumer called sqs:ChangeMessageVisibility on arn:aws:sqs:[\w-]+:000000000000:\S+\.fifo/,
    );
    expect(report.denials).toContainEqual(
      expect.objectContaining({
        principal: 'Functions/ControlConsumer',
        action: 'sqs:ChangeMessageVisibility',
      }),
    );
  });

  it('refuses a stack Lambda would refuse, naming every problem before anything runs', async () => {
    const assembly = changedAssembly((template) => {
      const functions = Object.values(template.Resources).filter(
        (resource) => resource.Type === 'AWS::Lambda::Function',
      );
      Object.assign(functions[0]?.Properties ?? {}, { Handler: 'missing.handler' });
      const environment = functions[1]?.Properties?.Environment as
        | { Variables: Record<string, unknown> }
        | undefined;
      if (environment) environment.Variables.AWS_REGION = 'eu-west-1';
    });

    const { code, output } = await rehearse(assembly);

    expect(code, output).toBe(RehearseExit.problems);
    expect(output).toMatch(/handler missing\.handler names no file missing\.js\/\.mjs\/\.cjs/);
    expect(output).toMatch(/environment variable AWS_REGION is reserved by Lambda/);
  });
});
