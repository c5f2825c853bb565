import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type FunctionDefinition, functionFindings } from '../../../tools/rehearsal/function-definitions.ts';

const taskRoot = mkdtempSync(join(tmpdir(), 'mesh-rehearsal-task-'));
writeFileSync(join(taskRoot, 'index.mjs'), 'export const handler = async () => ({});\n');

const fn: FunctionDefinition = {
  logicalId: 'Fn',
  displayName: 'Functions/Fn',
  functionName: 'Mesh-Fn',
  arn: 'arn:aws:lambda:eu-west-1:000000000000:function:Mesh-Fn',
  roleLogicalId: 'Role',
  roleName: 'Mesh-Role',
  taskRoot,
  handler: 'index.handler',
  runtime: 'nodejs24.x',
  timeoutSeconds: 10,
  memoryMb: 256,
  environment: { MESH_TABLE: 'Mesh-Table' },
  logGroupName: '/aws/lambda/Mesh-Fn',
  logGroupArn: 'arn:aws:logs:eu-west-1:000000000000:log-group:/aws/lambda/Mesh-Fn',
  tracing: true,
  reservedConcurrency: undefined,
};

describe('functionFindings', () => {
  it('finds nothing wrong with a bundled Node.js function whose handler file is there', () => {
    expect(functionFindings(fn, 'function Fn')).toEqual([]);
  });

  it('names each thing Lambda would refuse at deploy or at the first invocation', () => {
    const findings = functionFindings(
      {
        ...fn,
        handler: 'main.handler',
        runtime: 'python3.13',
        timeoutSeconds: 901,
        environment: { AWS_REGION: 'eu-west-1', 'BAD-NAME': 'x', BIG: 'x'.repeat(4096) },
      },
      'function Fn',
    );
    expect(findings).toEqual([
      'function Fn: runtime python3.13 is not a Node.js runtime; the rehearsal runs Node.js only',
      'function Fn: handler main.handler names no file main.js/.mjs/.cjs in its code',
      'function Fn: environment variable AWS_REGION is reserved by Lambda; the deploy would be refused',
      'function Fn: environment variable name "BAD-NAME" is not one Lambda accepts',
      expect.stringMatching(/^function Fn: its environment variables take \d+ bytes, over Lambda's 4096$/),
      "function Fn: timeout 901 s is outside Lambda's 1–900 s",
    ]);
  });
});
