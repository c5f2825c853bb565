import type { Summary } from '../../../server/core/summary/summary.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import type { ApiClient } from '../../http/api-client.ts';
import { releaseOf } from '../held-back.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';

/**
 * `mesh status --summary [--rebuild]`: the counts of the mesh from `GET /summary`, which reads
 * no node, or counted again first (`POST /summary/rebuild`, a full read, for recovery). With
 * `--json` the result is the summary as the API answers it (docs/http-api.md).
 */
export async function printSummary(api: ApiClient, output: Output, rebuild: boolean): Promise<ExitCode> {
  const summary = rebuild
    ? await api.call<Summary>('POST', '/summary/rebuild')
    : await api.call<Summary>('GET', '/summary');
  output.result(summary);
  if (rebuild) output.say(cliLines.summaryRebuilt, { nodes: summary.nodes });
  if (!summary.exact)
    output.say(cliLines.summaryNotExact, {
      lost: summary.catchingUp !== true,
      ...(summary.catchingUp ? { catchingUp: true } : {}),
    });
  output.line(
    `nodes ${summary.nodes}  enrolled ${summary.enrolled}  online ${summary.online}  behind ${summary.behind}`,
  );
  output.line(
    `healthy ${summary.health.healthy}  unhealthy ${summary.health.unhealthy}  health unknown ${summary.health.unknown}`,
  );
  if (summary.revisions.length > 0) {
    output.line(
      table(
        ['revision', 'applied', 'failed'],
        summary.revisions.map((r) => [r.revision, r.applied, r.failed]),
      ),
    );
  }
  if (summary.modules.length > 0) {
    output.line(
      table(
        ['module', 'version', 'carriers', 'applied', 'failed'],
        summary.modules.map((m) => [m.module, m.version ?? '-', m.carriers, m.applied, m.failed]),
      ),
    );
  }
  // Hosts before facts say none: a summary from such a control plane has no lists.
  const agents = summary.agents ?? [];
  const systems = summary.systems ?? [];
  const architectures = summary.architectures ?? [];
  if (agents.length > 0)
    output.line(
      table(
        ['agent', 'nodes'],
        agents.map((agent) => [agent.value, agent.nodes]),
      ),
    );
  if (systems.length > 0)
    output.line(
      table(
        ['os', 'nodes'],
        systems.map((system) => [system.value, system.nodes]),
      ),
    );
  if (architectures.length > 0)
    output.line(
      table(
        ['arch', 'nodes'],
        architectures.map((arch) => [arch.value, arch.nodes]),
      ),
    );
  if (summary.waiting)
    output.line(
      `${summary.waiting.relations} ${summary.waiting.relations === 1 ? 'relation waits' : 'relations wait'} for an enrolment on ${summary.waiting.nodes} ${summary.waiting.nodes === 1 ? 'node' : 'nodes'}; mesh status shows which`,
    );
  if (summary.health.unhealthy > 0)
    output.line(`${summary.health.unhealthy} unhealthy; mesh status --unhealthy shows which`);
  const neverEnrolled = summary.nodes - summary.enrolled;
  if (neverEnrolled > 0)
    output.line(
      `${neverEnrolled} ${neverEnrolled === 1 ? 'node has' : 'nodes have'} no enrolled host (never enrolled): they apply nothing until mesh-host enrol; waves skip them`,
    );
  for (const rollout of summary.heldBack?.rollouts ?? [])
    output.line(
      `rollout ${rollout.id} (${rollout.state}) holds back ${rollout.notSent} ${rollout.notSent === 1 ? 'node' : 'nodes'} it has not sent: ${releaseOf(`rollout:${rollout.id}`)}`,
    );
  for (const freeze of summary.heldBack?.freezes ?? [])
    output.line(
      `freeze ${freeze.on === 'all' ? '--all' : `on ${freeze.on}`}${freeze.until ? ` until ${freeze.until}` : ''}: ${freeze.reason}; ${releaseOf(`freeze:${freeze.on}`)}`,
    );
  if (summary.behind > 0)
    output.line(
      summary.heldBack
        ? `${summary.behind} behind, some of them held back (above); mesh push --behind sends the others`
        : `${summary.behind} behind; mesh push --behind`,
    );
  return ExitCode.ok;
}

function table(head: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = [head, ...rows.map((row) => row.map(String))];
  const widths = head.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((cell, column) => (cell ?? '').padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
