import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { functionSpecs as specs } from '../../lib/server/functions/table.ts';
import { type Assembly, readAssembly } from '../../tools/rehearsal/assembly.ts';
import { checkBundles } from '../../tools/rehearsal/bundles.ts';
import { stackOf } from '../../tools/rehearsal/stack.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';
import { meshFunctionsOf } from '../cdk/support.ts';

/**
 * The functions' code as `npm run synth` builds it: the real app synthesized by the cdk CLI with
 * every function bundled by the local esbuild (tools/rehearsal/synth.ts; the same synthesis
 * `npm run rehearse` takes). The cdk project and the rehearsal's judge read the template of a
 * synthesis without bundles; this is the one place the run waits for esbuild, beside the other
 * packaging, so it runs alongside the template's readers rather than before them.
 */
let assembly: Assembly;

beforeAll(async () => {
  assembly = readAssembly((await cachedSynth()).cdkOut);
}, 600_000);

/** The manifest name of a synthesized function, from the description MeshFunctions gives it. */
const functionNameOf = (resource: { Properties: Record<string, unknown> }) =>
  /^mesh ([a-z0-9-]+):/.exec(String(resource.Properties.Description))?.[1];

describe('the functions’ bundles in the synthesized app', () => {
  it('are one per manifest entry, ESM with a source map', () => {
    const resources = Object.entries(assembly.template.Resources);
    const functions = meshFunctionsOf({
      findResources: (type) => Object.fromEntries(resources.filter(([, resource]) => resource.Type === type)),
    }) as Array<[string, { Properties: Record<string, unknown> }]>;
    expect(functions.map(([, fn]) => functionNameOf(fn)).sort()).toEqual(
      specs.map((spec) => spec.name).sort(),
    );
    const assets = JSON.parse(readFileSync(join(assembly.dir, 'Mesh.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string } }>;
    };
    for (const [, fn] of functions) {
      const key = String((fn.Properties.Code as { S3Key: string }).S3Key).replace(/\.zip$/, '');
      const source = assets.files[key]?.source.path as string;
      expect(existsSync(join(assembly.dir, source, 'index.mjs')), functionNameOf(fn)).toBe(true);
      expect(existsSync(join(assembly.dir, source, 'index.mjs.map')), functionNameOf(fn)).toBe(true);
    }
  });

  it('each hold their own handler and leave the AWS SDK to the runtime', () => {
    const assets = JSON.parse(readFileSync(join(assembly.dir, 'Mesh.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string } }>;
    };
    const resources = Object.values(assembly.template.Resources).filter(
      (resource): resource is { Type: string; Properties: Record<string, unknown> } =>
        resource.Type === 'AWS::Lambda::Function' &&
        functionNameOf({ Properties: resource.Properties ?? {} }) !== undefined,
    );
    const bundled = resources.map((fn) => {
      const key = String((fn.Properties.Code as { S3Key: string }).S3Key).replace(/\.zip$/, '');
      const map = JSON.parse(
        readFileSync(join(assembly.dir, assets.files[key]?.source.path as string, 'index.mjs.map'), 'utf8'),
      ) as { sources: string[] };
      const handlers = map.sources.filter((source) => /(^|\/)functions\/[a-z0-9-]+\.ts$/.test(source));
      return {
        name: functionNameOf(fn),
        handlers: handlers.map((source) => /([a-z0-9-]+)\.ts$/.exec(source)?.[1]),
        sdk: map.sources.filter((source) => source.includes('node_modules/@aws-sdk/')).length,
      };
    });
    expect(bundled.map((bundle) => bundle.name).sort()).toEqual(specs.map((spec) => spec.name).sort());
    for (const { name, handlers, sdk } of bundled)
      expect({ name, handlers, sdk }).toEqual({ name, handlers: [name], sdk: 0 });
  });

  it('each load in a plain Node with only @aws-sdk/* beside them', async () => {
    expect(await checkBundles(stackOf(assembly))).toEqual([]);
  }, 180_000);
});
