import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { exportText, planPages } from '../../../lib/clients/cli/commands/mesh-file-pages.ts';
import { makeOutput } from '../../../lib/clients/cli/output.ts';
import { ApiClient } from '../../../lib/clients/http/api-client.ts';
import { meshExportHandler, meshPlanHandler } from '../../../lib/server/api/handlers/mesh-file.ts';
import type { LiveMesh, LiveNode } from '../../../lib/server/core/mesh-file/index.ts';
import { type FactRemovals, MeshFileService } from '../../../lib/server/core/mesh-file/service.ts';

/** 8,000 nodes, each with labels, three modules and a relation: an export and a plan of several pages. */
function generatedMesh(count: number, revision: string): LiveMesh {
  const nodes: LiveNode[] = Array.from({ length: count }, (_, index) => ({
    node: `web-${String(index).padStart(5, '0')}`,
    labels: { role: 'web' },
    assignments: [
      { module: 'base', provides: null },
      { module: 'nginx', provides: null },
      { module: 'rabbit', provides: 'amqp' },
    ],
    relations:
      index === 0
        ? []
        : [{ consumerModule: 'nginx', providerNode: 'web-00000', providerModule: 'rabbit', kind: 'amqp' }],
  }));
  return { revision, nodes };
}

/** The control plane in-process: the two routes' handlers behind fetch, over a mesh the test may move. */
function controlPlane(live: () => LiveMesh, onAnswer: () => void = () => {}) {
  const refuse = async () => {
    throw new Error('nothing is written in these tests');
  };
  const removals: FactRemovals = { unconsume: refuse, unassign: refuse, removeNode: refuse };
  const meshFiles = new MeshFileService({
    reader: { read: async () => ({ mesh: live(), modules: new Map() }) },
    writer: { write: refuse },
    removals,
  });
  const exportRoute = meshExportHandler({ meshFiles });
  const planRoute = meshPlanHandler({ meshFiles });
  const fake: typeof fetch = async (input) => {
    const request = input as Request;
    const url = new URL(request.url);
    const event = {
      headers: {},
      queryStringParameters: Object.fromEntries(url.searchParams),
      body: request.method === 'POST' ? await request.text() : null,
    } as unknown as APIGatewayProxyEvent;
    const route = url.pathname === '/mesh/export' ? exportRoute : planRoute;
    const answer = (await route(event, {} as never)) as { statusCode: number; body: string };
    onAnswer();
    return new Response(answer.body, { status: answer.statusCode });
  };
  return { api: new ApiClient('http://control-plane', { fetch: fake }), meshFiles };
}

function heard() {
  const said: string[] = [];
  const stream = { write: (text: string) => said.push(text) };
  const streams = {
    out: stream as unknown as typeof process.stdout,
    err: stream as unknown as typeof process.stderr,
  };
  return { output: makeOutput(true, streams), said };
}

// Thousands of nodes exported and planned a few times: seconds on a loaded machine.
describe('mesh export and mesh diff read their answers a page at a time', { timeout: 60_000 }, () => {
  it('prints the export its pages join into, the same bytes as unpaged, saying each page', async () => {
    const live = generatedMesh(8000, 'r1');
    const { api, meshFiles } = controlPlane(() => live);
    const { output, said } = heard();
    const text = await exportText(api, output, 'yaml');
    expect(text).toBe((await meshFiles.export('yaml')).text);
    expect(said.filter((line) => line.includes('"answer.page"')).length).toBeGreaterThan(0);
  });

  it('joins the plan pages into the plan unpaged', async () => {
    const live = generatedMesh(8000, 'r1');
    const { api, meshFiles } = controlPlane(() => live);
    const body = { file: 'version: 1\nnodes:\n  other-1: {}\n' };
    const { output, said } = heard();
    const plan = await planPages(api, output, {}, body);
    expect(plan).toEqual((await meshFiles.plan(body)).plan);
    expect(said.filter((line) => line.includes('"answer.page"')).length).toBeGreaterThan(0);
  });

  it('reads the export again from its first page when the mesh moved between two pages', async () => {
    let live = generatedMesh(8000, 'r1');
    let answers = 0;
    const { api, meshFiles } = controlPlane(
      () => live,
      () => {
        answers += 1;
        if (answers === 1) live = generatedMesh(8001, 'r2');
      },
    );
    const { output, said } = heard();
    const text = await exportText(api, output, 'yaml');
    expect(text).toBe((await meshFiles.export('yaml')).text);
    expect(text).toContain('web-08000:');
    expect(said.some((line) => line.includes('"answer.restarted"'))).toBe(true);
  });
});
