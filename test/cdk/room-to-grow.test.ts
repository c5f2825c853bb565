import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { MeshStack } from '../../lib/deploy/mesh-stack.ts';
import { type FunctionSpec, functionSpecs } from '../../lib/server/functions/table.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';
import { unbundledApp } from './support.ts';

/** CloudFormation's quotas on one template (each nested stack is a template of its own). */
const cloudFormation = { resources: 500, parameters: 200, outputs: 200 } as const;
/** What a stack may hold today, so the next routes, alarms and dashboards fit without a new split. */
const todaysCeiling = 450;
/** The function rows each stack must have room for. */
const moreFunctions = 30;

type Counted = { stack: string; resources: number; parameters: number; outputs: number };
type TemplateJson = {
  Resources?: Record<string, { Type: string; Metadata?: Record<string, unknown> }>;
  Parameters?: object;
  Outputs?: object;
};

const counted = (stack: string, template: TemplateJson): Counted => ({
  stack,
  resources: Object.keys(template.Resources ?? {}).length,
  parameters: Object.keys(template.Parameters ?? {}).length,
  outputs: Object.keys(template.Outputs ?? {}).length,
});

/** The root stack Mesh and each of its nested stacks, as synthesized into an assembly's directory. */
function stacksIn(dir: string): Counted[] {
  const read = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as TemplateJson;
  const root = read('Mesh.template.json');
  const nested = Object.values(root.Resources ?? {})
    .filter((resource) => resource.Type === 'AWS::CloudFormation::Stack')
    .map((resource) => String(resource.Metadata?.['aws:asset:path']));
  return [counted('Mesh', root), ...nested.map((file) => counted(file, read(file)))];
}

describe('every stack of the synthesized app', () => {
  let stacks: Counted[];
  beforeAll(async () => {
    stacks = stacksIn((await cachedSynth({ bundles: false })).cdkOut);
  }, 300_000);

  it(`is split, each stack at most ${todaysCeiling} resources`, () => {
    expect(stacks.length).toBeGreaterThan(1);
    for (const stack of stacks) expect(stack.resources, stack.stack).toBeLessThanOrEqual(todaysCeiling);
  });
});

/**
 * The real function table and 30 more rows of the costliest kind (an operator route: a function,
 * role, policy, log group, method, resource, permission and alarm each), built into one app:
 * every stack must still be under CloudFormation's quotas.
 */
describe(`the app with ${moreFunctions} more function rows`, () => {
  it("keeps every stack under CloudFormation's resources, parameters and outputs", () => {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-room-'));
    const template = functionSpecs.find((spec) => spec.name === 'mesh-status') as FunctionSpec;
    const more: FunctionSpec[] = Array.from({ length: moreFunctions }, (_, i) => ({
      ...template,
      name: `grown-${i}`,
      route: { method: 'GET', path: `/grown-${i}/{node}`, auth: 'operator', role: 'viewer' },
    })) as FunctionSpec[];
    const specs = [...functionSpecs, ...more];
    // the construct reads only that each row has a handler file; nothing is bundled here
    for (const spec of specs) writeFileSync(join(dir, `${spec.name}.ts`), '');
    const app = unbundledApp();
    const stack = new MeshStack(app, 'Mesh', { specs, functionsDir: dir });
    expect(stack.functions.functions.size).toBe(functionSpecs.length + moreFunctions);
    const { directory } = app.synth();
    const stacks = [stack, stack.compute, stack.edge, stack.monitoring].map((each) =>
      counted(
        each.node.path,
        JSON.parse(readFileSync(join(directory, each.templateFile), 'utf8')) as TemplateJson,
      ),
    );
    for (const each of stacks) {
      expect(each.resources, each.stack).toBeLessThanOrEqual(cloudFormation.resources);
      expect(each.parameters, each.stack).toBeLessThanOrEqual(cloudFormation.parameters);
      expect(each.outputs, each.stack).toBeLessThanOrEqual(cloudFormation.outputs);
    }
  }, 300_000);
});
