import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { LocalApplyFlow } from '../../../lib/local/local-apply-flow.ts';
import {
  meshApplyHandler,
  meshExportHandler,
  meshPlanHandler,
} from '../../../lib/server/api/handlers/mesh-file.ts';
import { joinListPages, pageBytes, pageOfLists, pageOfText } from '../../../lib/server/core/answer-pages.ts';
import type { ApplyPlan, LiveMesh, LiveNode } from '../../../lib/server/core/mesh-file/index.ts';
import {
  type BoundedApplyOutcome,
  planCountsOf,
  planListPaths,
} from '../../../lib/server/core/mesh-file/pages.ts';
import type { LiveMeshReader, MeshFileWriter } from '../../../lib/server/core/mesh-file/ports.ts';
import { type FactRemovals, MeshFileService } from '../../../lib/server/core/mesh-file/service.ts';
import { MemoryApplyJobs } from '../../support/memory-apply-jobs.ts';

/** The rule of docs/http-api.md: no answer over 1 MB. */
const oneMiB = 1024 * 1024;

/** A live mesh of `count` nodes shaped like the bench's: three modules, one relation, a provider per 100. */
function generatedMesh(count: number, revision = 'r1'): LiveMesh {
  const nodes: LiveNode[] = [];
  for (let index = 0; index < count; index += 1) {
    const node = `web-${String(index).padStart(5, '0')}`;
    const provider = `web-${String(index - (index % 100)).padStart(5, '0')}`;
    nodes.push({
      node,
      labels: { role: 'web', zone: `z${index % 7}` },
      assignments: [
        { module: 'base', provides: null },
        { module: 'nginx', provides: null },
        { module: 'rabbit', provides: 'amqp' },
      ],
      relations:
        provider === node
          ? []
          : [{ consumerModule: 'nginx', providerNode: provider, providerModule: 'rabbit', kind: 'amqp' }],
    });
  }
  return { revision, nodes };
}

/** A service over a live mesh held in memory, whose writer says it wrote everything and writes nothing. */
function serviceOver(live: () => LiveMesh): MeshFileService {
  const reader: LiveMeshReader = { read: async () => ({ mesh: live(), modules: new Map() }) };
  const writer: MeshFileWriter = {
    write: async () => ({ transactions: 0, items: 0, touched: [], complete: true }),
  };
  const refuse = async () => {
    throw new Error('nothing is removed in these tests');
  };
  const removals: FactRemovals = { unconsume: refuse, unassign: refuse, removeNode: refuse };
  return new MeshFileService({ reader, writer, removals });
}

type Answer = { readonly status: number; readonly bytes: number; readonly body: Record<string, unknown> };

async function ask(
  handler: ReturnType<typeof meshExportHandler>,
  event: Partial<APIGatewayProxyEvent>,
): Promise<Answer> {
  const answer = (await handler({ headers: {}, ...event } as APIGatewayProxyEvent, {} as never)) as {
    statusCode: number;
    body: string;
  };
  return { status: answer.statusCode, bytes: Buffer.byteLength(answer.body), body: JSON.parse(answer.body) };
}

/** Every page of a paged answer, from the first to the one without `next`. */
async function allPages(askPage: (cursor?: string) => Promise<Answer>): Promise<Answer[]> {
  const pages: Answer[] = [];
  let cursor: string | undefined;
  do {
    const page = await askPage(cursor);
    expect(page.status, JSON.stringify(page.body).slice(0, 300)).toBe(200);
    pages.push(page);
    cursor = page.body.next as string | undefined;
  } while (cursor);
  return pages;
}

describe('pageOfText and pageOfLists', () => {
  it('cut a text after whole lines within the budget, escapes counted, and join back to it', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `  "node-${i}": {"quoted": "\\\\ ${i}"}\n`).join('');
    const chunks: string[] = [];
    for (let at: number | null = 0; at !== null; ) {
      const cut: { chunk: string; next: number | null } = pageOfText(text, at, 20_000);
      expect(Buffer.byteLength(JSON.stringify(cut.chunk))).toBeLessThanOrEqual(20_002);
      if (cut.next !== null) expect(cut.chunk.endsWith('\n')).toBe(true);
      chunks.push(cut.chunk);
      at = cut.next;
    }
    expect(chunks.length).toBeGreaterThan(10);
    expect(chunks.join('')).toBe(text);
  });

  it('cut inside a line longer than the budget rather than never end', () => {
    const line = 'x'.repeat(100);
    const { chunk, next } = pageOfText(line, 0, 30);
    expect(chunk).toBe('x'.repeat(30));
    expect(next).toBe(30);
  });

  it('cut lists through their paths, every other field on each page, and join back to the document', () => {
    const doc = { id: 'd', a: { x: [1, 2, 3], y: ['p', 'q'] }, b: [{ n: 1 }, { n: 2 }, { n: 3 }] };
    const paths = [['a', 'x'], ['a', 'y'], ['b']];
    const pages: (typeof doc)[] = [];
    for (let at: number | null = 0; at !== null; ) {
      const cut: { page: typeof doc; next: number | null } = pageOfLists(doc, paths, at, 60);
      expect(cut.page.id).toBe('d');
      pages.push(cut.page);
      at = cut.next;
    }
    expect(pages.length).toBeGreaterThan(1);
    expect(joinListPages(pages, paths)).toEqual(doc);
  });
});

// Twelve thousand nodes exported and planned page by page: seconds on a loaded machine.
describe('GET /mesh/export and POST /mesh/plan a page at a time', { timeout: 60_000 }, () => {
  // 12,000 nodes: the export about 2.3 MB and the plan about 3 MB unpaged.
  const live = generatedMesh(12_000);
  const service = serviceOver(() => live);
  const exportHandler = meshExportHandler({ meshFiles: service });
  const planHandler = meshPlanHandler({ meshFiles: service });

  it('answers the export in pages of at most 1 MB that join into the file unpaged, in both formats', async () => {
    for (const format of ['yaml', 'json'] as const) {
      const whole = (await service.export(format)).text;
      expect(Buffer.byteLength(JSON.stringify(whole))).toBeGreaterThan(2 * oneMiB);
      const pages = await allPages((cursor) =>
        ask(exportHandler, { queryStringParameters: { format, ...(cursor ? { cursor } : {}) } }),
      );
      for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(oneMiB);
      expect(pages.length).toBeGreaterThan(2);
      expect(pages.map((page) => page.body.file).join('')).toBe(whole);
    }
  });

  it('answers the plan in pages of at most 1 MB that join into the plan unpaged', async () => {
    // The file drops every relation and renames nothing: the plan's lists are the whole mesh's drift.
    const file = 'version: 1\nnodes:\n  other-1: {}\n';
    const { plan: whole } = await service.plan({ file });
    expect(Buffer.byteLength(JSON.stringify(whole))).toBeGreaterThan(2 * oneMiB);
    const pages = await allPages((cursor) =>
      ask(planHandler, { body: JSON.stringify({ file, ...(cursor ? { cursor } : {}) }) }),
    );
    for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(oneMiB);
    expect(pages.length).toBeGreaterThan(2);
    const plans = pages.map(({ body: { next: _next, ...plan } }) => plan as unknown as ApplyPlan);
    expect(joinListPages(plans, planListPaths)).toEqual(whole);
  });

  it("answers an apply within 1 MB, its plan's lists cut to their first names and every list counted", async () => {
    // Every node, module and relation of the live mesh is drift to this file, and every node added is behind.
    const file = 'version: 1\ngroups:\n  new:\n    nodes: new-[00001-04000]\n    modules:\n      nginx: {}\n';
    const { plan: whole } = await service.plan({ file });
    expect(Buffer.byteLength(JSON.stringify(whole))).toBeGreaterThan(2 * oneMiB);
    const answer = await ask(
      meshApplyHandler({
        meshFiles: service,
        applyJobs: new MemoryApplyJobs(),
        applyFlow: new LocalApplyFlow(),
        now: () => new Date(),
      }),
      { body: JSON.stringify({ file }) },
    );
    expect(answer.status).toBe(200);
    expect(answer.bytes).toBeLessThanOrEqual(oneMiB);
    const outcome = answer.body as unknown as BoundedApplyOutcome;
    expect(outcome.planCut).toBe(true);
    expect(outcome.planCounts).toEqual(planCountsOf(whole));
    expect(outcome.plan.behind).toEqual(whole.behind.slice(0, outcome.plan.behind.length));
    expect(outcome.plan.behind.length).toBeGreaterThanOrEqual(10);
    expect(outcome.plan.digest).toBe(whole.digest);
  });

  it('refuses a cursor it did not give (400 bad_cursor), and a page of a mesh that moved (409)', async () => {
    const badCursor = await ask(exportHandler, { queryStringParameters: { cursor: 'bm90LWEtY3Vyc29y' } });
    expect(badCursor.status).toBe(400);
    expect((badCursor.body.error as { code: string }).code).toBe('bad_cursor');
    const first = await ask(exportHandler, { queryStringParameters: { format: 'yaml' } });
    const next = first.body.next as string;
    const otherFormat = await ask(exportHandler, { queryStringParameters: { format: 'json', cursor: next } });
    expect((otherFormat.body.error as { code: string }).code).toBe('bad_cursor');
    const planCursor = await ask(planHandler, {
      body: JSON.stringify({ file: 'version: 1\nnodes: {}\n', cursor: next }),
    });
    expect((planCursor.body.error as { code: string }).code).toBe('bad_cursor');

    let mesh = live;
    const moving = serviceOver(() => mesh);
    const page1 = await ask(meshExportHandler({ meshFiles: moving }), { queryStringParameters: {} });
    mesh = generatedMesh(12_001, 'r2');
    const page2 = await ask(meshExportHandler({ meshFiles: moving }), {
      queryStringParameters: { cursor: page1.body.next as string },
    });
    expect(page2.status).toBe(409);
    expect((page2.body.error as { code: string }).code).toBe('mesh_moved');
  });
});

it('keeps a page under 1 MiB with room for its envelope', () => {
  expect(pageBytes).toBeLessThan(oneMiB - 10_000);
});
