import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { commentMarker } from '../../tools/github-action/run.ts';
import { brokerAndThreeWebs } from '../support/mesh-files.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The GitHub Action's script (tools/github-action/run.ts) against a running control plane and a
 * GitHub API on loopback that records what it is sent: a branch's file changing a label is
 * planned on the pull request as one comment (old → new), edited on the next run (where a test
 * in the file fails, and so does the check), and applied
 * with its push on the main branch.
 */
type Recorded = { method: string; url: string; authorization?: string; body?: { body: string } };

let api: RunningApi;
let github: Server;
let githubUrl: string;
const recorded: Recorded[] = [];
const comments: { id: number; body: string }[] = [];
const folder = mkdtempSync(join(tmpdir(), 'github-action-'));

const bodyOf = async (request: IncomingMessage) => {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text ? (JSON.parse(text) as { body: string }) : undefined;
};

beforeAll(async () => {
  api = await startLocalApi({ port: 0, parts: localPartsFor(await provisionTestResources('githubaction')) });
  github = createServer(async (request, response) => {
    const body = await bodyOf(request);
    recorded.push({
      method: request.method ?? '',
      url: request.url ?? '',
      authorization: request.headers.authorization,
      body,
    });
    const answer = (status: number, value: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(value));
    };
    if (request.method === 'GET' && request.url?.startsWith('/repos/acme/fleet/issues/7/comments')) {
      return answer(200, request.url.includes('page=1') ? comments : []);
    }
    if (request.method === 'POST' && request.url === '/repos/acme/fleet/issues/7/comments' && body) {
      comments.push({ id: 101 + comments.length, body: body.body });
      return answer(201, comments.at(-1));
    }
    const edited = request.url?.match(/^\/repos\/acme\/fleet\/issues\/comments\/(\d+)$/);
    const comment = comments.find((one) => one.id === Number(edited?.[1]));
    if (request.method === 'PATCH' && comment && body) {
      comment.body = body.body;
      return answer(200, comment);
    }
    answer(404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
  githubUrl = `http://127.0.0.1:${(github.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await api?.stop();
  await new Promise((resolve) => github?.close(resolve));
});

function action(event: 'pull_request' | 'push', file: string, ref: string) {
  const eventPath = join(folder, `${event}.json`);
  writeFileSync(
    eventPath,
    JSON.stringify(
      event === 'push' ? { repository: { default_branch: 'main' } } : { pull_request: { number: 7 } },
    ),
  );
  const child = spawn(process.execPath, ['tools/github-action/run.ts'], {
    env: {
      PATH: process.env.PATH,
      MESH_FILE: file,
      MESH_API: api.url,
      GITHUB_EVENT_NAME: event,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_REPOSITORY: 'acme/fleet',
      GITHUB_REF: ref,
      GITHUB_API_URL: githubUrl,
      GITHUB_TOKEN: 'ghs_test',
      GITHUB_STEP_SUMMARY: join(folder, 'summary.md'),
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, output })),
  );
}

describe('the GitHub Action', () => {
  it('comments the plan of a pull request with old → new, edits the same comment, and applies with --push on main', async () => {
    const base = join(folder, 'mesh.yaml');
    writeFileSync(base, brokerAndThreeWebs);
    expect((await runMesh(api.url, ['apply', '-f', base, '--push'])).code).toBe(0);
    writeFileSync(
      base,
      `${brokerAndThreeWebs.replace('labels: {role: web}', 'labels: {role: edge}')}tests:\n  - {label: {role: edge}, reaches: broker-1/rabbit}\n`,
    );

    const planned = await action('pull_request', base, 'refs/pull/7/merge');
    expect(planned.code, planned.output).toBe(0);
    expect(comments).toHaveLength(1);
    const [comment] = comments;
    expect(comment?.body.startsWith(commentMarker(base))).toBe(true);
    expect(comment?.body).toContain('Merging applies these changes');
    expect(comment?.body).toContain('role: web → edge');
    expect(comment?.body).toContain('tests passed (1): nodes labelled role=edge reaches broker-1/rabbit');
    expect(comment?.body).toContain('--plan --full` exited 0');
    expect(recorded.every((request) => request.authorization === 'Bearer ghs_test')).toBe(true);
    expect(readFileSync(join(folder, 'summary.md'), 'utf8')).toContain('role: web → edge');

    // the branch gains a test the change breaks: the same comment says so, and the check fails
    const relabelled = readFileSync(base, 'utf8');
    writeFileSync(base, `${relabelled}  - {label: {role: web}, reaches: broker-1/rabbit}\n`);
    const failing = await action('pull_request', base, 'refs/pull/7/merge');
    expect(failing.code, failing.output).not.toBe(0);
    expect(comments).toHaveLength(1);
    expect(recorded.filter((request) => request.method === 'PATCH')).toHaveLength(1);
    expect(comments[0]?.body).toContain('**The plan failed**');
    expect(comments[0]?.body).toContain('test-failed');
    writeFileSync(base, relabelled);

    expect((await action('push', base, 'refs/heads/feature')).output).toContain('nothing applied');
    const applied = await action('push', base, 'refs/heads/main');
    expect(applied.code, applied.output).toBe(0);
    const read = async (path: string) => (await fetch(`${api.url}${path}`)).json();
    expect(await read('/nodes/web-1')).toMatchObject({ labels: { role: 'edge' } });
    const { nodes } = (await read('/status')) as { nodes: { node: string; behind: boolean }[] };
    expect(nodes.map((node) => node.behind)).toEqual([false, false, false, false]);
    expect(recorded.filter((request) => request.method !== 'GET')).toHaveLength(2);
  });
});
