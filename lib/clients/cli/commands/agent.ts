import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { StoredRelease, Transfer } from '../../../server/core/agent-release/ports.ts';
import {
  manifestFileOf,
  type SignedRelease,
  signedRelease,
  transferFileOf,
} from '../../../server/core/agent-release/release.ts';
import { labelValue } from '../../../server/core/mesh/labels.ts';
import type { NodeStatus } from '../../../server/core/views/ports.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import type { ApiClient } from '../../http/api-client.ts';
import { digestOfFile, TransferError, uploadFile } from '../../http/release-transfer.ts';
import { action, type CommandContext } from '../command-context.ts';
import { cliLines } from '../output-lines.ts';
import { startRollout, type WaveOptions, waveBody } from './rollout.ts';

type PublishAnswer =
  | { readonly state: 'upload'; readonly upload: Transfer }
  | { readonly state: 'published'; readonly stored: boolean; readonly release: StoredRelease };

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** The release FILE's manifest says it is, checked against the file before anything is sent. */
async function releaseOf(file: string): Promise<SignedRelease | string> {
  let text: string;
  try {
    text = await readFile(manifestFileOf(file), 'utf8');
  } catch {
    return `${manifestFileOf(file)} cannot be read: a release is the executable and its signed manifest beside it`;
  }
  let parsed: ReturnType<typeof signedRelease.safeParse>;
  try {
    parsed = signedRelease.safeParse(JSON.parse(text));
  } catch {
    return `${manifestFileOf(file)} is not JSON`;
  }
  if (!parsed.success)
    return `${manifestFileOf(file)} is not a signed release: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
  const found = await digestOfFile(file).catch(() => undefined);
  if (!found) return `${file} cannot be read`;
  const { manifest } = parsed.data;
  if (found.bytes !== manifest.bytes || found.sha256 !== manifest.sha256)
    return `${file} is not the executable its manifest names (${found.bytes} bytes, SHA-256 ${found.sha256}; the manifest says ${manifest.bytes} bytes, ${manifest.sha256})`;
  if (manifest.transfer) {
    const compressed = transferFileOf(file, manifest.transfer.encoding);
    const sent = await digestOfFile(compressed).catch(() => undefined);
    if (!sent)
      return `${compressed} cannot be read: the manifest names the executable compressed beside it, which is what is uploaded`;
    if (sent.bytes !== manifest.transfer.bytes || sent.sha256 !== manifest.transfer.sha256)
      return `${compressed} is not the compressed executable its manifest names (${sent.bytes} bytes, SHA-256 ${sent.sha256}; the manifest says ${manifest.transfer.bytes} bytes, ${manifest.transfer.sha256})`;
  }
  return parsed.data;
}

async function publishOne(context: CommandContext, file: string): Promise<StoredRelease | string> {
  const release = await releaseOf(file);
  if (typeof release === 'string') return release;
  const name = `${release.manifest.version} (${release.manifest.arch})`;
  let answer = await context.api.call<PublishAnswer>('POST', '/agent/releases', release);
  if (answer.state === 'upload') {
    const { transfer } = release.manifest;
    const sent = transfer ? transferFileOf(file, transfer.encoding) : file;
    context.output.line(
      `uploading ${sent} (${mib(transfer?.bytes ?? release.manifest.bytes)}${transfer ? `, the ${mib(release.manifest.bytes)} executable compressed` : ''}) for release ${name}`,
    );
    await uploadFile(answer.upload, sent);
    answer = await context.api.call<PublishAnswer>('POST', '/agent/releases', release);
  }
  if (answer.state !== 'published')
    return `release ${name}: the executable was uploaded, but the control plane does not find it`;
  context.output.line(
    answer.stored
      ? `published release ${name}: ${mib(release.manifest.bytes)}${release.manifest.transfer ? ` (${mib(release.manifest.transfer.bytes)} to download)` : ''}, SHA-256 ${release.manifest.sha256}`
      : `release ${name} was published already (${answer.release.publishedAt}, by ${answer.release.publishedBy}): nothing changed`,
  );
  return answer.release;
}

/**
 * `mesh agent publish FILE...`, `mesh agent releases` (docs/host-agent.md, "Releases"): a
 * release is FILE (the executable) and FILE.release.json (its manifest, signed with a release
 * key); the executable goes straight to the release store, never through the API.
 */
export function registerAgentCommands(program: Command): void {
  const agent = program.command('agent').description("the host agent's releases and upgrades");
  agent
    .command('publish')
    .description('publish releases of mesh-host: each FILE with its signed manifest FILE.release.json')
    .argument('<files...>', 'the executables')
    .action(
      action(async (context, files: string[]) => {
        const published: StoredRelease[] = [];
        for (const file of files) {
          let outcome: StoredRelease | string;
          try {
            outcome = await publishOne(context, file);
          } catch (error) {
            if (!(error instanceof TransferError)) throw error;
            outcome = error.message;
          }
          if (typeof outcome === 'string') {
            context.output.say(cliLines.usage, { argument: file, problem: outcome });
            context.output.result({ published, error: { code: 'release_refused', message: outcome, file } });
            const left = files.slice(files.indexOf(file) + 1);
            if (left.length > 0) context.output.line(`not published: ${left.join(', ')}`);
            return ExitCode.usage;
          }
          published.push(outcome);
        }
        context.output.result({ published });
        return ExitCode.ok;
      }),
    );
  agent
    .command('upgrade')
    .description(
      'roll a published version of mesh-host out to every node: each wave sets it on its nodes and pushes them, a host taking it through its supervisor',
    )
    .argument('<version>', 'the version to run, as mesh agent releases lists it')
    .option(
      '--waves <sizes>',
      'the waves, e.g. 1,10%,100%: each a count or a percentage, cumulative (default: 100%, all at once)',
    )
    .option('--max-failures <n>', 'halt when more nodes fail than this (N or P%)')
    .option('--wave-timeout <d>', 'how long a wave waits for its nodes (90s, 10m, 1h)')
    .option('--pause', 'stop after each wave until mesh rollout resume', false)
    .option(
      '--auto-undo',
      'when it halts, take it back at once (mesh rollout undo): each host to the version it ran before',
      false,
    )
    .option('--no-wait', 'answer the rollout id once its nodes are claimed')
    .action(
      action(async (context, version: string, options: WaveOptions) => {
        const checked = labelValue.safeParse(version);
        if (!checked.success) {
          context.output.say(cliLines.usage, {
            argument: version,
            problem: 'a version is 1 to 63 of [A-Za-z0-9._-], starting and ending with a letter or digit',
          });
          return ExitCode.usage;
        }
        const { releases } = await context.api.call<{ releases: StoredRelease[] }>('GET', '/agent/releases');
        const arches = releases.filter((r) => r.manifest.version === version).map((r) => r.manifest.arch);
        if (arches.length === 0) {
          const message = `no release ${version} of mesh-host is published: mesh agent publish FILE adds one`;
          context.output.line(message);
          context.output.result({ error: { code: 'release_not_found', message } });
          return ExitCode.notFound;
        }
        const statuses = await everyNode(context.api);
        const missing = withoutRelease(statuses, arches);
        if (missing.size > 0) {
          const named = [...missing]
            .map(
              ([arch, on]) =>
                `${on.length} node${on.length === 1 ? '' : 's'} report ${arch} (${on.slice(0, 5).join(', ')}${on.length > 5 ? ', …' : ''})`,
            )
            .join('; ');
          const message = `release ${version} of mesh-host is published for ${arches.sort().join(', ')} only: ${named}, whose hosts could only fail; mesh agent publish FILE adds it for them`;
          context.output.line(message);
          context.output.result({
            error: {
              code: 'release_not_found',
              message,
              details: { version, arches: [...missing.keys()].sort() },
            },
          });
          return ExitCode.notFound;
        }
        const nodes = statuses.map((status) => status.node);
        if (nodes.length === 0) {
          context.output.line('the mesh has no node: nothing to upgrade');
          context.output.result({ version, nodes: [] });
          return ExitCode.ok;
        }
        context.output.line(
          `agent ${version} (published for ${arches.sort().join(', ')}) to ${nodes.length} node${nodes.length === 1 ? '' : 's'}`,
        );
        const body = {
          agent: version,
          nodes,
          ...waveBody({ ...options, waves: options.waves ?? '100%' }),
        };
        return startRollout(context.api, context.output, body, options.wait);
      }),
    );
  agent
    .command('releases')
    .description('the releases of mesh-host published, newest first')
    .action(
      action(async (context) => {
        const { releases } = await context.api.call<{ releases: StoredRelease[] }>('GET', '/agent/releases');
        context.output.result({ releases });
        if (releases.length === 0)
          context.output.line('no release is published: mesh agent publish FILE adds one');
        for (const r of releases)
          context.output.line(
            `${r.manifest.version}  ${r.manifest.arch}  ${mib(r.manifest.bytes)}  ${r.manifest.sha256.slice(0, 12)}  published ${r.publishedAt} by ${r.publishedBy}`,
          );
        return ExitCode.ok;
      }),
    );
}

/** Every node of the mesh, by name, the control plane paging them (`GET /status`). */
async function everyNode(api: ApiClient): Promise<NodeStatus[]> {
  const nodes: NodeStatus[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ limit: '1000', ...(cursor ? { cursor } : {}) });
    const page = await api.call<{ nodes: NodeStatus[]; next?: string }>('GET', `/status?${query}`);
    nodes.push(...page.nodes);
    cursor = page.next;
  } while (cursor);
  return nodes;
}

/**
 * The nodes whose hosts report an architecture no release of the version is published for, by
 * architecture: each would fail its revision (`not published for arm64`) and halt the rollout.
 * A host that reported no facts is not known, and not counted.
 */
function withoutRelease(nodes: readonly NodeStatus[], arches: readonly string[]): Map<string, string[]> {
  const missing = new Map<string, string[]>();
  for (const node of nodes) {
    const arch = node.facts?.arch;
    if (arch === undefined || arches.includes(arch)) continue;
    missing.set(arch, [...(missing.get(arch) ?? []), node.node]);
  }
  return missing;
}
