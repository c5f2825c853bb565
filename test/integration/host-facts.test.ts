import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { StaleReportError } from '../../lib/server/core/control/errors.ts';
import type { ReportBody } from '../../lib/server/core/control/messages.ts';
import type { HostFacts } from '../../lib/server/core/mesh/host-facts.ts';
import type { Summary } from '../../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { NodeDetails } from '../../lib/server/core/views/views.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Facts as the report store keeps them (lib/server/adapters/control/facts-items.ts) on DynamoDB
 * Local, matched by selectors on a page of status, counted by the summary and shown by the CLI.
 */
let parts: Parts;
let api: RunningApi;
let client: ApiClient;

const machine = (arch: string, agent: string, os: string): HostFacts => ({
  os,
  kernel: '6.1.0-18',
  arch,
  agent,
  build: 'abc123',
  cpus: 4,
  memoryBytes: 8 * 1024 ** 3,
  bootedAt: '2026-11-01T09:00:00.000Z',
});

beforeAll(async () => {
  const config = await provisionTestResources('facts');
  parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
  // web-1 and web-2 carry the same label; their hosts differ. db-1's host has said nothing.
  for (const node of ['web-1', 'web-2', 'db-1'])
    await parts.meshService.addNode(node, { role: node.startsWith('web') ? 'web' : 'db' }, localActor());
});

afterAll(async () => {
  await api?.stop();
});

let heard = Date.parse('2026-11-01T10:00:00.000Z');
async function record(node: string, report: Omit<ReportBody, 'node' | 'sentAt'>) {
  heard += 1000;
  const heardAt = new Date(heard).toISOString();
  await parts.reports.recordReport(
    { node, sentAt: heardAt, ...report },
    { heardAt, queuedAt: new Date().toISOString() },
  );
}
const heartbeat = (sequence: number, facts: HostFacts) =>
  ({ sequence, state: 'heartbeat', revision: 0, facts }) as const;

describe('facts a host reports', () => {
  it('are kept newer-wins with the report, matched by --on, counted and shown', async () => {
    await record('web-1', heartbeat(1, machine('x64', '1.4.0', 'debian-12')));
    await record('web-2', heartbeat(1, machine('arm64', '1.3.0', 'debian-12')));
    await record('web-2', heartbeat(2, machine('arm64', '1.4.0', 'rhel-9.4')));
    // An older report that comes late writes nothing, its facts included.
    await expect(record('web-2', heartbeat(1, machine('x64', '1.2.0', 'debian-11')))).rejects.toThrow(
      StaleReportError,
    );

    const on = async (selector: string) =>
      (await client.call<{ nodes: NodeStatus[] }>('GET', `/status?on=${encodeURIComponent(selector)}`)).nodes
        .map((n) => n.node)
        .filter((n) => ['web-1', 'web-2', 'db-1'].includes(n));
    expect(await on('arch=x64')).toEqual(['web-1']);
    expect(await on('agent=1.4.0,role=web')).toEqual(['web-1', 'web-2']);
    expect(await on('os=rhel-9.4')).toEqual(['web-2']);
    expect(await on('!agent')).toEqual(['db-1']);

    const shown = await client.call<NodeDetails>('GET', '/nodes/web-2');
    expect(shown.facts).toEqual(machine('arm64', '1.4.0', 'rhel-9.4'));
    const summary = await client.call<Summary>('POST', '/summary/rebuild');
    expect(summary.agents).toContainEqual({ value: '1.4.0', nodes: 2 });
    expect(summary.systems).toContainEqual({ value: 'rhel-9.4', nodes: 1 });
    expect(summary.architectures).toContainEqual({ value: 'arm64', nodes: 1 });
    expect(summary.agents?.map((a) => a.value)).not.toContain('1.3.0');

    const [status, show, counts] = await Promise.all([
      runMesh(api.url, ['status', '--on', 'arch=x64']),
      runMesh(api.url, ['node', 'show', 'web-2']),
      runMesh(api.url, ['status', '--summary']),
    ]);
    expect(status.code).toBe(0);
    const rows = status.stdout.split('\n').filter((line) => /^[a-z0-9-]+ {2}(not )?enrolled/.test(line));
    expect(rows).toEqual([
      expect.stringMatching(/^web-1 .* agent 1\.4\.0 {2}debian-12 {2}x64 {2}last heard /),
    ]);
    expect(show.stdout).toMatch(
      /machine +rhel-9\.4, kernel 6\.1\.0-18, arm64\n +4 CPUs, 8\.0 GiB memory, booted /,
    );
    expect(show.stdout).toContain('mesh-host 1.4.0 (build abc123)');
    expect(counts.stdout).toMatch(/agent +nodes\n1\.4\.0 +2\n/);
    expect(counts.stdout).toMatch(/arch +nodes\n(x64 +1\narm64 +1|arm64 +1\nx64 +1)\n/);
  });
});
