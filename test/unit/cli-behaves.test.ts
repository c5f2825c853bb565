import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { fakeApi, runMesh, runMeshReaderGone } from '../support/fake-api.ts';

// Each test runs `mesh` as a process (about 0.5 s of CPU each from source): seconds on a loaded machine.

/** An audit trail of `count` records, newest first, served `limit` at a time with a cursor. */
const recordOf = (at: number) => ({
  time: new Date(Date.UTC(2026, 11, 5, 12, 0, 0) - at * 1000).toISOString(),
  action: 'node.add',
  target: `node:web-${at}`,
  outcome: 'done',
  principal: 'local',
  source: '127.0.0.1',
});
const trailOf = (count: number) => (url: URL) => {
  if (url.pathname !== '/audit') return undefined;
  const from = Number(url.searchParams.get('cursor') ?? 0);
  const limit = Number(url.searchParams.get('limit') ?? 50);
  const records = Array.from({ length: Math.max(0, Math.min(limit, count - from)) }, (_, i) =>
    recordOf(from + i),
  );
  // as DynamoDB does, a page cut at its limit names its continuation even when nothing is past it
  const next = from + limit <= count && records.length === limit ? String(from + limit) : undefined;
  return { status: 200, body: { records, ...(next ? { next } : {}) } };
};

describe('mesh audit says what it did not show', { timeout: 30_000 }, () => {
  let api: Awaited<ReturnType<typeof fakeApi>>;
  let count = 250;
  beforeAll(async () => {
    api = await fakeApi(({ url }) => trailOf(count)(url));
  });
  afterAll(() => api.close());

  it('refuses an action the trail never records, naming the ones it does, and asks nothing', async () => {
    const before = api.requests.length;
    const ran = await runMesh(api.url, ['audit', '--action', 'nonsense']);
    expect(ran.code).toBe(ExitCode.usage);
    expect(ran.stderr).toMatch(/no audit action nonsense: one of token\.issue, .*node\.add/);
    expect(api.requests.length).toBe(before);
  });

  it('says older records exist past --limit, and says nothing when the trail ends there', async () => {
    count = 250;
    const cut = await runMesh(api.url, ['audit', '--limit', '100']);
    expect(cut.code).toBe(ExitCode.ok);
    expect(cut.stdout.trim().split('\n')).toHaveLength(100);
    expect(cut.stderr).toContain('100 newest records shown, and older ones exist');
    const json = await runMesh(api.url, ['audit', '--limit', '100', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ more: true });

    count = 100;
    const whole = await runMesh(api.url, ['audit', '--limit', '100', '--json']);
    expect(JSON.parse(whole.stdout).more).toBeUndefined();
    expect(whole.stderr).toBe('');
  });
});

describe('mesh with its reader gone (mesh audit | head -1)', { timeout: 30_000 }, () => {
  it('finishes quietly with the exit code it reached: no EPIPE stack trace', async () => {
    const api = await fakeApi(({ url }) => trailOf(300)(url));
    try {
      const ran = await runMeshReaderGone(api.url, ['audit', '--limit', '300']);
      expect(ran.stderr).not.toMatch(/EPIPE|Error|at /);
      expect(ran.code).toBe(ExitCode.ok);
    } finally {
      await api.close();
    }
  });
});

describe('mesh apply --push', { timeout: 30_000 }, () => {
  const plan = {
    revision: '7',
    digest: 'd',
    prune: false,
    add: { nodes: [], modules: [], relations: [] },
    labels: [{ node: 'db-2', set: { tier: 'gold' }, unset: [] }],
    remove: { relations: [], modules: [], nodes: [] },
    drift: { nodes: [], modules: [], relations: [], labels: [] },
    provisions: { minted: [], withdrawn: [] },
    behind: ['db-2'],
    massRemoval: null,
    problems: [],
  };
  const applied = {
    plan,
    planCounts: { labels: 1, behind: 1 },
    planCut: false,
    complete: true,
    removed: { nodes: 0, modules: 0, relations: 0 },
    written: { items: 2, transactions: 1 },
    progress: { touched: 1, touchedNodes: ['db-2'], remaining: 0, remainingNodes: [] },
  };
  const pushed = {
    pushed: null,
    flushed: [{ node: 'db-2', revision: 8, round: 1 }],
    rounds: 1,
    behind: [],
    heldBack: [],
  };

  it('says it pushes what it left behind instead of advising a push, then pushes', async () => {
    const api = await fakeApi(({ method, url }) => {
      if (method === 'POST' && url.pathname === '/mesh/apply') return { status: 200, body: applied };
      if (method === 'POST' && url.pathname === '/push') return { status: 200, body: pushed };
      return undefined;
    });
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'mesh-apply-')), 'mesh.yaml');
      writeFileSync(file, 'version: 1\nnodes: {}\n');
      const withPush = await runMesh(api.url, ['apply', '-f', file, '--push']);
      expect(withPush.code).toBe(ExitCode.ok);
      expect(withPush.stdout).toContain('1 behind: db-2; pushing them now');
      expect(withPush.stdout).not.toContain('mesh push --behind');
      expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /mesh/apply', 'POST /push']);

      const without = await runMesh(api.url, ['apply', '-f', file]);
      expect(without.stdout).toContain('1 behind: db-2; mesh push --behind');
    } finally {
      await api.close();
    }
  });

  it('upgrades each version the file sets once applied, in an upgrade rollout with --waves, and leaves the push to after it with --no-wait', async () => {
    const versioned = {
      ...applied,
      plan: { ...plan, versions: [{ module: 'rabbit', was: '3.12', now: '3.13' }] },
    };
    const api = await fakeApi(({ method, url, body }) => {
      if (method === 'POST' && url.pathname === '/mesh/apply') return { status: 200, body: versioned };
      if (method === 'POST' && url.pathname === '/upgrades') {
        const waved = (body as { waves?: string }).waves !== undefined;
        return {
          status: 202,
          body: {
            queued: { subject: 'upgrade:rabbit', messageId: 'm1' },
            upgrade: { module: 'rabbit', version: '3.13' },
            ...(waved ? { rollout: 'r-1' } : {}),
          },
        };
      }
      if (method === 'POST' && url.pathname === '/push') return { status: 200, body: pushed };
      return undefined;
    });
    try {
      const file = join(mkdtempSync(join(tmpdir(), 'mesh-apply-')), 'mesh.yaml');
      writeFileSync(file, 'version: 1\nnodes: {}\n');
      const queued = await runMesh(api.url, ['apply', '-f', file, '--push']);
      expect(queued.code, queued.stderr).toBe(ExitCode.ok);
      expect(queued.stdout).toContain(
        'version rabbit 3.12 → 3.13: queued upgrade:rabbit; the nodes carrying it are pushed when it is taken',
      );
      expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /mesh/apply',
        'POST /upgrades',
        'POST /push',
      ]);
      const waved = await runMesh(api.url, ['apply', '-f', file, '--push', '--waves', '1,100%', '--no-wait']);
      expect(waved.code, waved.stderr).toBe(ExitCode.ok);
      expect(waved.stdout).toContain('version rabbit 3.12 → 3.13: rollout r-1');
      expect(waved.stdout).toContain('mesh push --behind --waves 1,100%');
      expect(api.requests.slice(3).map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /mesh/apply',
        'POST /upgrades',
      ]);
      expect(api.requests[4]?.body).toMatchObject({ module: 'rabbit', version: '3.13', waves: '1,100%' });
    } finally {
      await api.close();
    }
  });
});

describe('mesh consume under sealing', { timeout: 30_000 }, () => {
  it('says the provision waits for both enrolments, not that the next push mints it', async () => {
    const api = await fakeApi(({ method }) =>
      method === 'POST'
        ? {
            status: 201,
            body: {
              consumer: { node: 'web1', module: 'nginx' },
              provider: { node: 'broker', module: 'rabbit' },
            },
          }
        : undefined,
    );
    try {
      const ran = await runMesh(api.url, ['consume', 'web1/nginx', 'broker/rabbit']);
      expect(ran.code).toBe(ExitCode.ok);
      expect(ran.stdout).toContain('its provision is minted once web1 and broker are both enrolled');
      expect(ran.stdout).not.toContain('mints its provision');
    } finally {
      await api.close();
    }
  });
});

describe('mesh wait node', { timeout: 30_000 }, () => {
  const status = (over: object) => ({
    node: 'web1',
    enrolled: true,
    sentRevision: 4,
    appliedRevision: 4,
    reportState: 'applied',
    behind: false,
    online: true,
    ...over,
  });

  it('exits 0 once the node is applied and healthy at what it was sent, 18 when unhealthy, 17 past --timeout', async () => {
    let answer: object = status({ appliedRevision: 3 });
    const api = await fakeApi(({ url }) =>
      url.pathname === '/nodes/web1' ? { status: 200, body: answer } : undefined,
    );
    try {
      const waiting = runMesh(api.url, ['wait', 'node', 'web1', '--for', 'healthy', '--timeout', '20s']);
      // the host applies revision 4, and its check passes a moment later
      await new Promise((resolve) => setTimeout(resolve, 500));
      answer = status({
        health: { state: 'unknown', check: true, revision: 4, since: null, checkedAt: null, reason: null },
      });
      await new Promise((resolve) => setTimeout(resolve, 2500));
      answer = status({
        health: { state: 'healthy', check: true, revision: 4, since: null, checkedAt: null, reason: null },
      });
      const healthy = await waiting;
      expect(healthy.code).toBe(ExitCode.ok);
      expect(healthy.stdout).toBe('web1 healthy at revision 4\n');

      answer = status({
        health: {
          state: 'unhealthy',
          check: true,
          revision: 4,
          since: null,
          checkedAt: null,
          reason: 'port 80 closed',
        },
      });
      const sick = await runMesh(api.url, ['wait', 'node', 'web1', '--for', 'healthy']);
      expect(sick.code).toBe(ExitCode.waitFailed);
      expect(sick.stderr).toContain(
        'web1 will not be healthy at revision 4: its check says unhealthy: port 80 closed',
      );

      answer = status({ appliedRevision: 3 });
      const late = await runMesh(api.url, ['wait', 'node', 'web1', '--for', 'applied', '--timeout', '1s']);
      expect(late.code).toBe(ExitCode.waitTimedOut);
      expect(late.stderr).toContain('node web1 applied: not yet after 1s');
    } finally {
      await api.close();
    }
  });
});

describe('mesh status --watch', { timeout: 30_000 }, () => {
  it('prints the view again every interval, each under a line with the time', async () => {
    let reads = 0;
    const api = await fakeApi(({ url }) => {
      if (url.pathname !== '/status') return undefined;
      reads += 1;
      return { status: 200, body: { nodes: [status(reads)] } };
    });
    function status(read: number) {
      return {
        node: `web${read}`,
        enrolled: false,
        enrolledAt: null,
        sentRevision: null,
        sentAt: null,
        appliedRevision: null,
        appliedAt: null,
        reportState: null,
        behind: false,
        online: null,
        lastHeard: null,
      };
    }
    try {
      const ran = await runMesh(api.url, ['status', '--watch', '--interval', '1s'], {}, 8_000);
      const headers = ran.stdout.split('\n').filter((line) => line.startsWith('Every 1s: mesh status'));
      expect(headers.length).toBeGreaterThanOrEqual(2);
      expect(ran.stdout).toMatch(/^Every 1s: mesh status .*\nweb1 .*\nEvery 1s: mesh status .*\nweb2 /);
    } finally {
      await api.close();
    }
  });
});
