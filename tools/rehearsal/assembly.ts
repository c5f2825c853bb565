import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { flattenNestedStacks } from './nested-stacks.ts';
import { RehearsalProblem } from './problems.ts';

export type CfnResource = {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
  readonly Condition?: string;
};

export type CfnTemplate = {
  readonly Resources: Record<string, CfnResource>;
  readonly Parameters?: Record<string, { readonly Default?: unknown }>;
  readonly Conditions?: Record<string, unknown>;
  readonly Mappings?: Record<string, Record<string, Record<string, unknown>>>;
};

/** One stack of a synthesized cloud assembly, and where its assets are. */
export type Assembly = {
  readonly dir: string;
  readonly stackName: string;
  readonly template: CfnTemplate;
  /** The stack's region when the app fixed one at synth; otherwise the rehearsal chooses. */
  readonly region: string | undefined;
  readonly account: string | undefined;
  /** The file an asset was published from, by its S3 object key (a state machine's definition, say). */
  assetFile(objectKey: string): string | undefined;
};

type Manifest = {
  readonly artifacts?: Record<
    string,
    {
      readonly type: string;
      readonly environment?: string;
      readonly properties?: { readonly templateFile?: string; readonly file?: string };
    }
  >;
};

type AssetManifest = {
  readonly files?: Record<
    string,
    {
      readonly source: { readonly path: string };
      readonly destinations: Record<string, { readonly objectKey: string }>;
    }
  >;
};

const readJson = <T>(path: string, what: string): T => {
  if (!existsSync(path)) throw new RehearsalProblem('assembly', `${what} ${path} does not exist`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    throw new RehearsalProblem('assembly', `${what} ${path} is not JSON (${(error as Error).message})`);
  }
};

/** Reads the stack (the only one, or the one named) from a cloud assembly such as cdk.out. */
export function readAssembly(dir: string, stackName?: string): Assembly {
  const manifest = readJson<Manifest>(join(dir, 'manifest.json'), 'the cloud assembly manifest');
  const artifacts = Object.entries(manifest.artifacts ?? {});
  const stacks = artifacts.filter(([, artifact]) => artifact.type === 'aws:cloudformation:stack');
  const chosen = stackName ? stacks.filter(([name]) => name === stackName) : stacks;
  if (chosen.length !== 1) {
    const names = stacks.map(([name]) => name).join(', ') || 'none';
    throw new RehearsalProblem(
      'assembly',
      stackName
        ? `the assembly in ${dir} has no stack ${stackName} (stacks: ${names})`
        : `the assembly in ${dir} has ${stacks.length} stacks (${names}); name one with --stack`,
    );
  }
  const [name, artifact] = chosen[0] as (typeof stacks)[number];
  const templateFile = artifact.properties?.templateFile ?? `${name}.template.json`;
  // The stack's nested stacks (lib/deploy/mesh-stack.ts) read as part of it: each is a template
  // beside the root's, named by its resource's `aws:asset:path`.
  const template = flattenNestedStacks(
    readJson<CfnTemplate>(join(dir, templateFile), `the template of ${name}`),
    (logicalId, resource) => {
      const file = resource.Metadata?.['aws:asset:path'];
      return typeof file === 'string'
        ? readJson<CfnTemplate>(join(dir, file), `the template of nested stack ${logicalId}`)
        : undefined;
    },
  );
  const [, account, region] = /^aws:\/\/([^/]+)\/(.+)$/.exec(artifact.environment ?? '') ?? [];

  const objects = new Map<string, string>();
  for (const [, entry] of artifacts.filter(([, a]) => a.type === 'cdk:asset-manifest')) {
    if (!entry.properties?.file) continue;
    const assets = readJson<AssetManifest>(join(dir, entry.properties.file), 'the asset manifest');
    for (const file of Object.values(assets.files ?? {})) {
      for (const destination of Object.values(file.destinations)) {
        objects.set(destination.objectKey, join(dir, file.source.path));
      }
    }
  }
  return {
    dir,
    stackName: name,
    template: { ...template, Resources: template.Resources ?? {} },
    region: region && !region.startsWith('unknown-') ? region : undefined,
    account: account && !account.startsWith('unknown-') ? account : undefined,
    assetFile: (objectKey) => objects.get(objectKey),
  };
}

/** The logical ids of a template's resources of one type, in template order. */
export function resourcesOfType(template: CfnTemplate, type: string): Array<[string, CfnResource]> {
  return Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
}

/** A resource's path in the CDK app without the stack and `/Resource` (`Functions/ControlConsumer`), else its logical id. */
export function displayName(template: CfnTemplate, logicalId: string): string {
  const path = template.Resources[logicalId]?.Metadata?.['aws:cdk:path'];
  if (typeof path !== 'string') return logicalId;
  return path
    .split('/')
    .slice(1)
    .filter((part) => part !== 'Resource')
    .join('/');
}
