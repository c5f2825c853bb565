import { describe, expect, it } from 'vitest';
import {
  labelText,
  machineFacts,
  osName,
  parseOsRelease,
} from '../../lib/clients/host/agent/machine-facts.ts';
import { reportBody } from '../../lib/server/core/control/messages.ts';
import { hostFacts, labelsPartOf, labelsWithFacts } from '../../lib/server/core/mesh/host-facts.ts';
import { parseSelector } from '../../lib/server/core/mesh/labels.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import { passes } from '../../lib/server/core/views/view-pages.ts';

const facts = {
  os: 'debian-12',
  osVersion: 'Debian GNU/Linux 12 (bookworm)',
  kernel: '6.1.0-18-amd64',
  arch: 'x64',
  agent: '1.4.0',
  build: '3ea7cc5',
  cpus: 2,
  memoryBytes: 4 * 1024 ** 3,
  bootedAt: '2026-11-01T09:00:00.000Z',
};

describe('what a host says of its machine', () => {
  it('reads os-release as the distribution writes it, and names the OS as a selector matches it', () => {
    const release = parseOsRelease(
      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n# a comment\nbroken line\n',
    );
    expect(release).toMatchObject({
      ID: 'debian',
      VERSION_ID: '12',
      PRETTY_NAME: 'Debian GNU/Linux 12 (bookworm)',
    });
    expect(osName(release)).toBe('debian-12');
    expect(osName({ ID: 'rhel', VERSION_ID: '9.4' })).toBe('rhel-9.4');
    expect(osName({ ID: 'arch' })).toBe('arch');
    expect(labelText('Weird OS/2 +')).toBe('weird-os-2');
    expect(labelText('---')).toBe('unknown');
  });

  it('are bounded facts the report schema takes, on this very machine', async () => {
    const here = await machineFacts();
    expect(hostFacts.parse(here)).toEqual(here);
    expect(here.arch).toBe(process.arch);
    const report = { node: 'web-1', sequence: 1, state: 'heartbeat', revision: 0, sentAt: facts.bootedAt };
    expect(reportBody.safeParse({ ...report, facts }).success).toBe(true);
    expect(reportBody.safeParse({ ...report, facts: { ...facts, os: 'debian 12' } }).success).toBe(false);
    expect(reportBody.safeParse({ ...report, facts: { ...facts, kernel: 'x'.repeat(101) } }).success).toBe(
      false,
    );
    expect(reportBody.safeParse({ ...report, facts: { ...facts, kernel: '6.1\u001b[2J' } }).success).toBe(
      false,
    );
    expect(reportBody.safeParse({ ...report, facts: { ...facts, extra: 1 } }).success).toBe(false);
  });
});

describe('selectors over facts', () => {
  const status = (labels: Record<string, string>, withFacts = true): NodeStatus => ({
    node: 'web-1',
    enrolled: true,
    enrolledAt: null,
    sentRevision: 1,
    sentAt: null,
    appliedRevision: 1,
    appliedAt: null,
    reportState: 'applied',
    behind: false,
    online: true,
    lastHeard: null,
    labels,
    ...(withFacts ? { facts } : {}),
  });
  const on = (selector: string, node: NodeStatus) => passes({ on: parseSelector(selector) }, node, []);

  it('match agent, os and arch as the host said them, beside the labels, a fact in place of a label of its name', () => {
    expect(on('arch=x64', status({}))).toBe(true);
    expect(on('arch=arm64', status({}))).toBe(false);
    expect(on('agent=1.4.0,os=debian-12,role=web', status({ role: 'web' }))).toBe(true);
    expect(on('os!=debian-12', status({}))).toBe(false);
    expect(on('arch', status({}, false))).toBe(false);
    expect(on('!arch', status({}, false))).toBe(true);
    expect(labelsWithFacts({ arch: 'sparc', role: 'web' }, facts)).toEqual({
      arch: 'x64',
      role: 'web',
      agent: '1.4.0',
      os: 'debian-12',
    });
  });

  it('leave to the labels only what labels answer, so a list read before the facts rules no node out by a fact', () => {
    expect(labelsPartOf(parseSelector('arch=x64,role=web,!os'))).toEqual(parseSelector('role=web'));
  });
});
