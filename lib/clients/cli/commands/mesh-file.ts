import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ApplyPlan, MeshFileProblem } from '../../../server/core/mesh-file/index.ts';
import type { BoundedApplyOutcome } from '../../../server/core/mesh-file/pages.ts';
import { planMatches } from '../../../server/core/mesh-file/plan.ts';
import { sha256Of, uploadMaxBytes, uploadPartBodyBytes } from '../../../server/core/mesh-file/uploads.ts';
import type { PushOutcome } from '../../../server/core/push/ports.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { type ApiAnswer, type ApiClient, problemError } from '../../http/api-client.ts';
import { action } from '../command-context.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { followApplyJob, printJob } from './apply-job.ts';
import { applyAll } from './mesh-apply.ts';
import { exportText, planPages } from './mesh-file-pages.ts';
import { finished, followPush } from './push.ts';
import { followRollout, startRollout, type WaveOptions, waveBody, withWaveOptions } from './rollout.ts';

/**
 * `mesh export`, `mesh diff -f FILE`, `mesh apply -f FILE` (docs/mesh-file.md). `diff` exits as
 * `kubectl diff` does: 0 the file matches the mesh, 1 it does not, and more than 1 on an error,
 * so its "unexpected" is ExitCode.diffFailed, not the 1 other commands use.
 */
export type FileOptions = { file?: string; prune?: boolean; allowMassRemoval?: boolean };
export type ApplyOptions = FileOptions &
  WaveOptions & {
    plan?: boolean;
    full?: boolean;
    push?: boolean;
    revision?: string;
    digest?: string;
    fromPlan?: string;
    /** Follow this apply job instead of applying a file. */
    job?: string;
  };

/** `mesh diff`'s exits: 0 same, 1 differs, 2.. errors as everywhere else; an unexpected failure is 10. */
export const diffExit = { same: 0, differs: 1, unexpected: 10 } as const;

export function registerMeshFileCommands(program: Command): void {
  program
    .command('export')
    .description('print the file that reproduces the mesh (YAML unless --format json), on stdout')
    .option('--format <format>', 'yaml or json', 'yaml')
    .action(
      action(async ({ api, output }, options: { format: string }) => {
        if (options.format !== 'yaml' && options.format !== 'json') {
          output.say(cliLines.usage, {
            argument: '--format',
            problem: `yaml or json, not ${options.format}`,
          });
          return ExitCode.usage;
        }
        const file = await exportText(api, output, options.format);
        // The file itself, under --json too: a JSON export already is one document for scripts.
        process.stdout.write(file);
        return ExitCode.ok;
      }),
    );

  program
    .command('diff')
    .description(
      'print the plan of FILE against the mesh; exit 0 when they match, 1 when not, >1 on an error',
    )
    .requiredOption('-f, --file <file>', 'the mesh file (YAML or JSON)')
    .option('--prune', 'plan removing what the file does not hold', false)
    .option('--allow-mass-removal', 'with --prune: let it remove more than 10%', false)
    .option('--full', 'list every name of each change, not the first ten', false)
    .action(async (options: FileOptions & { full?: boolean }, command: Command) => {
      // kubectl's codes: the usual "unexpected" 1 would read as "differs".
      let planned = false;
      await action(async ({ api, output }) => {
        const plan = await planOf(api, output, options);
        if (typeof plan === 'number') return plan;
        planned = true;
        output.result(plan);
        printPlan(output, plan, options.full === true);
        return planMatches(plan) ? diffExit.same : diffExit.differs;
      })(command);
      if (!planned && process.exitCode === ExitCode.failed) process.exitCode = diffExit.unexpected;
    });

  withWaveOptions(program.command('apply'))
    .description(
      'make the mesh match FILE: add what it lacks; with --prune remove what the file does not hold',
    )
    .option('-f, --file <file>', 'the mesh file (YAML or JSON)')
    .option(
      '--job <id>',
      'follow an apply job to its end, instead of applying a file (with --push: then push)',
    )
    .option('--plan', 'print the plan, and write nothing', false)
    .option('--full', 'with --plan: list every name of each change, not the first ten', false)
    .option('--prune', 'remove what the mesh holds and the file does not (drift)', false)
    .option('--allow-mass-removal', 'with --prune: let it remove more than 10% of nodes or relations', false)
    .option('--revision <revision>', 'apply only if the mesh is still at this revision (a saved plan)')
    .option('--digest <digest>', 'apply only if the file still plans this digest (a saved plan)')
    .option(
      '--from-plan <plan>',
      'apply a plan saved by --plan --json only if the mesh has not moved; if it has, say what moved',
    )
    .option('--push', 'push the nodes left behind once the apply is done', false)
    .option(
      '--no-wait',
      'print the apply job id (when the apply outlives its request) or, with --push --waves, the rollout id, and let it run',
    )
    .action(
      action(async ({ api, output }, options: ApplyOptions) => {
        if ((options.file === undefined) === (options.job === undefined)) {
          const problem = 'give the mesh file (-f FILE) or an apply job to follow (--job ID), one of them';
          output.say(cliLines.usage, { argument: '--file', problem });
          return ExitCode.usage;
        }
        const fileOnly = [options.plan, options.prune, options.revision, options.digest, options.fromPlan];
        if (options.job !== undefined && fileOnly.some((o) => o !== undefined && o !== false)) {
          const problem =
            'follows a job started already: --plan, --prune, --revision, --digest and --from-plan go with -f';
          output.say(cliLines.usage, { argument: '--job', problem });
          return ExitCode.usage;
        }
        if (options.allowMassRemoval && !options.prune) {
          output.say(cliLines.usage, { argument: '--allow-mass-removal', problem: 'goes with --prune' });
          return ExitCode.usage;
        }
        const waved = [options.waves, options.maxFailures, options.waveTimeout].some((o) => o !== undefined);
        if ((waved || options.pause) && (!options.push || options.waves === undefined || options.plan)) {
          const problem =
            'with --max-failures, --wave-timeout and --pause, rolls out the push after the apply: use --push --waves SIZES, without --plan';
          output.say(cliLines.usage, { argument: '--waves', problem });
          return ExitCode.usage;
        }
        if (options.plan) {
          const plan = await planOf(api, output, options);
          if (typeof plan === 'number') return plan;
          output.result(plan);
          printPlan(output, plan, options.full === true);
          return ExitCode.ok;
        }
        let behind: number;
        let versions: ApplyPlan['versions'];
        let done = true;
        if (options.job !== undefined) {
          const job = await followApplyJob(api, output, options.job);
          output.result(job);
          printJob(output, job, behindAdvice(options));
          behind = job.plan.counts.behind ?? 0;
          versions = job.plan.versions ?? [];
          done = job.state === 'done';
        } else {
          const outcome = await applyAll(api, output, options);
          if (typeof outcome === 'number') return outcome;
          output.result(outcome);
          if ('state' in outcome) {
            printJob(output, outcome, behindAdvice(options));
            behind = outcome.plan.counts.behind ?? 0;
            versions = outcome.plan.versions ?? [];
            done = outcome.state === 'done';
          } else {
            printApplied(output, outcome, behindAdvice(options));
            behind = outcome.planCounts.behind ?? 0;
            versions = outcome.plan.versions ?? [];
          }
        }
        // The file's versions once its nodes and modules are written: a job still running
        // (--no-wait) has not written them yet, and `mesh apply --job ID` sets them when it is done.
        if (done && versions.length > 0) {
          const upgraded = await upgradeVersions(api, output, versions, options);
          if (upgraded !== ExitCode.ok) return upgraded;
        }
        if (!options.push || behind === 0) return ExitCode.ok;
        if (done && versions.length > 0 && options.waves !== undefined && !options.wait) {
          // The upgrades' rollouts claim their carriers when the control queue's consumer takes
          // them: a rollout of the nodes behind started now would claim some of them first.
          output.line(
            `${behind} nodes left behind are not rolled out while the upgrades' rollouts run: once they end, mesh push --behind --waves ${options.waves}`,
          );
          return ExitCode.ok;
        }
        if (options.waves !== undefined)
          return startRollout(api, output, { behind: true, ...waveBody(options) }, options.wait);
        return pushBehind(api, output);
      }),
    );
}

function readFile(output: Output, path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    output.say(cliLines.fileUnreadable, { file: path, reason: (error as Error).message });
    return undefined;
  }
}

/** What the control plane answers a new upload (POST /mesh/uploads). */
type UploadStarted = { readonly id: string; readonly parts: number; readonly partBytes: number };

/**
 * The file in parts (docs/mesh-file.md, "Large files"): each part base64 with its SHA-256, the
 * whole file's SHA-256 said first; a line each part. Its id is what the plan or apply names.
 */
async function uploadFile(api: ApiClient, output: Output, path: string, text: string): Promise<string> {
  const data = Buffer.from(text, 'utf8');
  const started = await api.call<UploadStarted>('POST', '/mesh/uploads', {
    bytes: data.length,
    sha256: sha256Of(data),
  });
  for (let part = 1; part <= started.parts; part++) {
    const bytes = data.subarray((part - 1) * started.partBytes, part * started.partBytes);
    await api.call('POST', '/mesh/uploads', {
      upload: started.id,
      part,
      data: bytes.toString('base64'),
      sha256: sha256Of(bytes),
    });
    const sent = Math.min(data.length, part * started.partBytes);
    output.say(cliLines.uploadPart, {
      file: path,
      upload: started.id,
      part,
      parts: started.parts,
      sent,
      bytes: data.length,
    });
  }
  return started.id;
}

/**
 * The request's body, or an exit code when the file cannot be read or is over what an upload
 * takes. A file whose request would be over a part's request (4 MiB) goes up in parts first and
 * the body names the upload: every request then stays within Lambda's 6 MB, the API Gateway event
 * around it and the file's JSON escaping counted.
 */
export async function bodyOf(api: ApiClient, output: Output, options: FileOptions) {
  const file = readFile(output, options.file ?? '');
  if (file === undefined) return ExitCode.usage;
  const flags = {
    ...(options.prune ? { prune: true } : {}),
    ...(options.allowMassRemoval ? { allowMassRemoval: true } : {}),
  };
  const body = { file, ...flags };
  if (Buffer.byteLength(JSON.stringify(body)) <= uploadPartBodyBytes) return body;
  const bytes = Buffer.byteLength(file);
  if (bytes > uploadMaxBytes) {
    output.say(cliLines.fileTooLarge, { file: options.file ?? '', bytes, limit: uploadMaxBytes });
    return ExitCode.usage;
  }
  return { upload: await uploadFile(api, output, options.file ?? '', file), ...flags };
}

/** An answer's body, or the exit of its problem: a bad file's problems printed as compilers do. */
export function answered<T>(output: Output, options: FileOptions, answer: ApiAnswer): T | ExitCode {
  if (answer.status === 422) {
    const error = (
      answer.body as {
        error?: { code?: string; details?: { problems?: MeshFileProblem[]; omitted?: number } };
      }
    )?.error;
    if (error?.code === 'bad_mesh_file') {
      const problems = error.details?.problems ?? [];
      for (const p of problems)
        output.say(cliLines.meshFileProblem, {
          file: options.file ?? '',
          line: p.line,
          column: p.column,
          problem: p.code,
          detail: p.message,
        });
      if (error.details?.omitted) output.say(cliLines.meshFileOmitted, { omitted: error.details.omitted });
      output.result({ error: { code: 'bad_mesh_file', problems, omitted: error.details?.omitted ?? 0 } });
      return ExitCode.usage;
    }
  }
  if (answer.status >= 400) throw problemError(answer);
  return answer.body as T;
}

async function planOf(api: ApiClient, output: Output, options: FileOptions) {
  const body = await bodyOf(api, output, options);
  if (typeof body === 'number') return body;
  return planPages(api, output, options, body);
}

async function pushBehind(api: ApiClient, output: Output): Promise<ExitCode> {
  output.say(cliLines.pushing, { what: 'every node that is behind' });
  const answer = await api.send('POST', '/push', { behind: true, maxRounds: 5, wait: true });
  if (answer.status >= 400) throw problemError(answer);
  if (answer.status === 200) return finished(output, answer.body as PushOutcome);
  const { push } = answer.body as { push: string };
  output.say(cliLines.following, { push });
  return followPush(api, output, push);
}

const listed = (names: readonly string[], max = 10) => listedOf(names, names.length, max);

/** The first names of a list of `total` (the list itself may be cut short), and how many more. */
const listedOf = (names: readonly string[], total: number, max = 10) =>
  total <= max ? names.join(', ') : `${names.slice(0, max).join(', ')} and ${total - max} more`;

/** A node's labels as the plan changes them: `db-2 (tier: gold → platinum, zone: unset)`. */
export function labelChangeText(change: ApplyPlan['labels'][number]): string {
  const was = (key: string) => change.was?.[key] ?? null;
  const parts = [
    ...Object.entries(change.set).map(([key, value]) => `${key}: ${was(key) ?? '(none)'} → ${value}`),
    ...change.unset.map((key) => `${key}: ${was(key) ?? '(none)'} → (unset)`),
  ];
  return `${change.node} (${parts.join(', ')})`;
}

/** A module's providers as the plan changes them: `web-1/app: db-1/pg → db-2/pg`. */
export const consumesChangeText = (change: ApplyPlan['consumes'][number]) =>
  `${change.node}/${change.module}: ${change.was.join(' + ') || '(none)'} → ${change.now.join(' + ') || '(none)'}`;

/** How many names a plan's line lists before "and N more (use --full)". */
export const planLineNames = 10;

/**
 * The plan for people: one line per kind of change with its count, the names listed up to ten
 * (every one with `--full`; `--json` holds them all), each label and each module's providers
 * with old → new, and each of the file's tests, passed or failed.
 */
export function printPlan(output: Output, plan: ApplyPlan, full = false): void {
  const line = (what: string, names: readonly string[]) => {
    if (names.length === 0) return;
    const more = names.length - planLineNames;
    const shown =
      full || more <= 0
        ? names.join(', ')
        : `${names.slice(0, planLineNames).join(', ')} and ${more} more (use --full)`;
    output.line(`${what} (${names.length}): ${shown}`);
  };
  output.line(`plan on mesh revision ${plan.revision}, digest ${plan.digest}`);
  line(
    'add nodes',
    plan.add.nodes.map((n) => n.node),
  );
  line(
    'add modules',
    plan.add.modules.map((m) => `${m.node}/${m.module}${m.provides ? ` (provides ${m.provides})` : ''}`),
  );
  line('add relations', plan.provisions.minted);
  line(
    'set labels',
    plan.labels.map((l) => labelChangeText(l)),
  );
  line('change what modules consume', (plan.consumes ?? []).map(consumesChangeText));
  line(
    'set module versions',
    (plan.versions ?? []).map((v) => `${v.module} (${v.was ?? '(none)'} → ${v.now})`),
  );
  line('remove relations', plan.provisions.withdrawn);
  line(
    'remove modules',
    plan.remove.modules.map((m) => `${m.node}/${m.module}`),
  );
  line('remove nodes', plan.remove.nodes);
  if (!plan.prune) {
    line('drift nodes, left alone', plan.drift.nodes);
    line(
      'drift modules, left alone',
      plan.drift.modules.map((m) => `${m.node}/${m.module}`),
    );
    line(
      'drift relations, left alone',
      plan.drift.relations.map(
        (r) => `${r.consumerNode}/${r.consumerModule} -> ${r.providerNode}/${r.providerModule}`,
      ),
    );
    line(
      'drift labels, left alone',
      plan.drift.labels.map((l) => `${l.node} (${l.keys.join(', ')})`),
    );
  }
  line('behind after', plan.behind);
  if (plan.massRemoval) output.line(plan.massRemoval.message);
  for (const p of plan.problems) output.line(`problem: ${p.message} [${p.code}]`);
  const tests = plan.tests ?? [];
  line(
    'tests passed',
    tests.filter((t) => t.passed).map((t) => t.test),
  );
  line(
    'tests failed',
    tests.filter((t) => !t.passed).map((t) => t.test),
  );
  if (planMatches(plan)) output.line('the mesh matches the file');
}

/**
 * Each module version the file sets, as `mesh upgrade MODULE VERSION` sets it (so freezes and
 * rollouts hold nodes back as for any upgrade): with --waves, an upgrade rollout of the module's
 * carriers, followed to its end unless --no-wait; without, an upgrade on the control queue
 * whose push sends every carrier when the consumer takes it.
 */
async function upgradeVersions(
  api: ApiClient,
  output: Output,
  versions: ApplyPlan['versions'],
  options: ApplyOptions,
): Promise<ExitCode> {
  for (const { module, was, now } of versions) {
    const change = `${module} ${was ?? '(none)'} → ${now}`;
    if (options.waves !== undefined) {
      const answer = await api.call<{ rollout: string }>('POST', '/upgrades', {
        module,
        version: now,
        ...waveBody(options),
      });
      output.line(`version ${change}: rollout ${answer.rollout}`);
      if (!options.wait) continue;
      const code = await followRollout(api, output, answer.rollout);
      if (code !== ExitCode.ok) return code;
    } else {
      const answer = await api.call<{ queued: { subject: string } }>('POST', '/upgrades', {
        module,
        version: now,
      });
      output.line(
        `version ${change}: queued ${answer.queued.subject}; the nodes carrying it are pushed when it is taken`,
      );
    }
  }
  return ExitCode.ok;
}

/** What becomes of the nodes an apply leaves behind: pushed here with --push, else the command that sends them. */
const behindAdvice = (options: ApplyOptions) =>
  !options.push
    ? 'mesh push --behind'
    : options.waves === undefined
      ? 'pushing them now'
      : 'rolling them out in waves now';

function printApplied(output: Output, outcome: BoundedApplyOutcome, advice: string): void {
  const { plan, written, removed } = outcome;
  // The answer's lists may be cut (a plan over one answer's bytes): its counts are whole.
  const count = (path: string) => outcome.planCounts[path] ?? 0;
  output.line(
    `applied on revision ${plan.revision}: added ${count('add.nodes')} nodes, ${count('add.modules')} modules, ${count('add.relations')} relations; labels on ${count('labels')} nodes; removed ${removed.nodes} nodes, ${removed.modules} modules, ${removed.relations} relations (${written.items} items in ${written.transactions} transactions)`,
  );
  const { touched, touchedNodes } = outcome.progress;
  if (touched > 0)
    output.line(`wrote ${touched} nodes: ${listed(touchedNodes)}${touched > touchedNodes.length ? '…' : ''}`);
  const drift =
    count('drift.nodes') + count('drift.modules') + count('drift.relations') + count('drift.labels');
  if (!plan.prune && drift > 0)
    output.line(
      `left as drift: ${count('drift.nodes')} nodes, ${count('drift.modules')} modules, ${count('drift.relations')} relations, labels on ${count('drift.labels')} nodes (mesh apply --prune removes them)`,
    );
  const behind = count('behind');
  if (behind > 0) output.line(`${behind} behind: ${listedOf(plan.behind, behind)}; ${advice}`);
}
