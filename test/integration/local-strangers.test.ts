import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { sendRaw } from '../support/raw-http.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

/**
 * Issue 36's findings 1, 5 (the unframed DELETE) and 6 (paths resolved), each as it was
 * reproduced against `npm start`: the local API takes requests only from this machine's own
 * clients, refuses a connection that broke HTTP's framing before the request before it runs,
 * and routes a path as sent. Every refusal is a 4xx that wrote nothing: both tables are read
 * whole before and after.
 */
let config: MeshConfig;
let api: RunningApi;
let parts: Parts;
let port: number;

beforeAll(async () => {
  config = await provisionTestResources('strangers');
  parts = localPartsFor(config);
  api = await startLocalApi({ port: 0, parts });
  port = Number(new URL(api.url).port);
  for (const node of ['web1', 'broker', 'victim4']) await parts.meshService.addNode(node, {}, actor);
  await addEnrolledNode(parts, 'enrolled1');
});

afterAll(async () => {
  await api?.stop();
});

const actor = { principal: 'local', source: 'test', requestId: 'strangers' };

/** A request sent as curl would send it, answered with its status and error code; what it changed in the tables. */
async function refused(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; code: string | undefined; text: string; changed: boolean }> {
  const before = await tableContents(config);
  const answer = await fetch(`${api.url}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await answer.text();
  const after = await tableContents(config);
  const code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  return { status: answer.status, code, text, changed: JSON.stringify(before) !== JSON.stringify(after) };
}

/**
 * The same through one raw connection: the request exactly as written, `Host` included. The
 * connection is closed by the refusal at once, so a handler that ran anyway would still be
 * writing: the tables are read after `settleMs`.
 */
async function refusedRaw(bytes: string, settleMs = 0) {
  const before = await tableContents(config);
  const answer = await sendRaw(port, bytes);
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  const after = await tableContents(config);
  return { ...answer, changed: JSON.stringify(before) !== JSON.stringify(after) };
}

const nodeExists = async (node: string) => (await parts.meshView.details(node)) !== undefined;

describe('finding 1: a web page cannot write to, or read from, the local control plane', () => {
  it('refuses the form-shaped cross-origin POST the run made (403, nothing written)', async () => {
    // curl -X POST -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' --data '{"node":"csrf1"}' /nodes
    const answer = await refused(
      'POST',
      '/nodes',
      { 'content-type': 'text/plain', origin: 'http://evil.example' },
      '{"node":"csrf1"}',
    );
    expect(answer).toMatchObject({ status: 403, code: 'origin_not_allowed', changed: false });
    expect(await nodeExists('csrf1')).toBe(false);
  });

  it('refuses a foreign origin even with a JSON body, and another port of this machine as another origin', async () => {
    for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1:1', `https://127.0.0.1:${port}`]) {
      const answer = await refused(
        'POST',
        '/nodes',
        { 'content-type': 'application/json', origin },
        '{"node":"csrf2"}',
      );
      expect({ origin, ...answer }).toMatchObject({
        origin,
        status: 403,
        code: 'origin_not_allowed',
        changed: false,
      });
    }
  });

  it('refuses a text/plain body posted to /mesh/apply with prune: the enrolled node stays (415)', async () => {
    const form = JSON.stringify({ file: 'version: 1\nnodes: {}\n', prune: true, allowMassRemoval: true });
    const answer = await refused('POST', '/mesh/apply', { 'content-type': 'text/plain' }, form);
    expect(answer).toMatchObject({ status: 415, code: 'unsupported_media_type', changed: false });
    const urlEncoded = await refused(
      'POST',
      '/mesh/apply',
      { 'content-type': 'application/x-www-form-urlencoded' },
      form,
    );
    expect(urlEncoded).toMatchObject({ status: 415, changed: false });
    expect(await nodeExists('enrolled1')).toBe(true);
  });

  it('refuses a rebound name (DNS rebinding): no token is issued, none is in the answer', async () => {
    const answer = await refusedRaw(
      `POST /nodes/enrolled1/token HTTP/1.1\r\nHost: rebind.evil.example:${port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    expect(answer.status).toBe(403);
    expect(answer.text).toContain('host_not_allowed');
    expect(answer.text).not.toMatch(/"token"/);
    expect(answer.changed).toBe(false);
    const read = await refusedRaw(
      `GET /nodes HTTP/1.1\r\nHost: rebind.evil.example:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(read.status).toBe(403);
    expect(read.text).not.toContain('enrolled1');
  });

  it('refuses a loopback name at another port, and a request without Host', async () => {
    for (const host of [`127.0.0.1:${port + 1}`, '127.0.0.1', `localhost.evil.example:${port}`]) {
      const answer = await refusedRaw(`GET /status HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect({ host, status: answer.status }).toEqual({ host, status: 403 });
    }
    const none = await refusedRaw('GET /status HTTP/1.0\r\n\r\n');
    expect(none.status).toBe(403);
  });

  it('answers this machine’s own clients: each loopback name, the page’s own origin, JSON', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const answer = await sendRaw(
        port,
        `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      );
      expect({ host, status: answer.status }).toEqual({ host, status: 200 });
    }
    const own = await fetch(`${api.url}/nodes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', origin: `http://localhost:${port}` },
      body: '{"node":"same-origin"}',
    });
    expect(own.status).toBe(201);
  });
});

describe('finding 5: a request whose body is not framed is refused before its handler runs', () => {
  it('keeps victim4 when DELETE /nodes/victim4 comes with an unframed body (printf … | nc)', async () => {
    // printf 'DELETE /nodes/victim4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n[[[]]]' | nc 127.0.0.1 4600
    const asTheRunSentIt = await refusedRaw(
      'DELETE /nodes/victim4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n[[[]]]',
      1_000,
    );
    expect(asTheRunSentIt.changed).toBe(false);
    const withItsPort = await refusedRaw(
      `DELETE /nodes/victim4 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n[[[]]]`,
      1_000,
    );
    expect(withItsPort.changed).toBe(false);
    expect(await nodeExists('victim4')).toBe(true);
    expect(withItsPort.status).toBe(400);
    expect(withItsPort.text).toContain('malformed_request');
    // one answer, the refusal: no second one for the DELETE
    expect(withItsPort.text.match(/HTTP\/1\.1/g)).toHaveLength(1);
  });

  it('refuses a body on a route that takes none, framed or chunked (400), and the node stays', async () => {
    const framed = await refusedRaw(
      `DELETE /nodes/victim4 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 6\r\nConnection: close\r\n\r\n[[[]]]`,
    );
    expect(framed.status).toBe(400);
    expect(framed.text).toContain('body_not_allowed');
    const chunked = await refusedRaw(
      `DELETE /nodes/victim4 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n6\r\n[[[]]]\r\n0\r\n\r\n`,
    );
    expect(chunked.status).toBe(400);
    expect([framed.changed, chunked.changed]).toEqual([false, false]);
    expect(await nodeExists('victim4')).toBe(true);
  });

  it('answers a request followed by a well-framed one in the same packet (pipelining still works)', async () => {
    const both = await sendRaw(
      port,
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(both.text.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
  });
});

describe('finding 6: paths are routed as sent, never resolved', () => {
  it('refuses /nodes/web1/../broker in every spelling: broker stays (400)', async () => {
    for (const path of [
      '/nodes/web1/../broker',
      '/nodes/web1/%2e%2e/broker',
      '/nodes/web1/%2E%2E/broker',
      '/nodes/web1/./../broker',
      '/nodes/web1\\..\\broker',
      '/nodes//broker',
    ]) {
      const answer = await refusedRaw(
        `DELETE ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      );
      expect({ path, status: answer.status, changed: answer.changed }).toEqual({
        path,
        status: 400,
        changed: false,
      });
      expect(answer.text).toContain('invalid_path');
    }
    expect([await nodeExists('broker'), await nodeExists('web1')]).toEqual([true, true]);
  });
});

describe('finding 1: the same rules in the emulators npm start runs', () => {
  /** What an emulator answers a request of the SDK's shape, `headers` added. */
  const ask = async (endpoint: string, target: string, headers: Record<string, string>, body = '{}') => {
    const answer = await fetch(endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': target,
        authorization:
          'AWS4-HMAC-SHA256 Credential=meshlocal/20260101/us-east-1/x/aws4_request, SignedHeaders=host, Signature=0',
        ...headers,
      },
      body,
    });
    await answer.arrayBuffer();
    return answer.status;
  };
  const rebound = async (endpoint: string) => {
    const { port: at } = new URL(endpoint);
    return (
      await sendRaw(
        Number(at),
        `POST / HTTP/1.1\r\nHost: rebind.evil.example:${at}\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      )
    ).status;
  };

  it('DynamoDB Local refuses a page (Origin, a preflight, a form) and a rebound name; answers the SDK', async () => {
    const { dynamodb } = inject('endpoints');
    const listTables = 'DynamoDB_20120810.ListTables';
    const preflight = await fetch(dynamodb, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect({
      own: await ask(dynamodb, listTables, {}),
      origin: await ask(dynamodb, listTables, { origin: 'http://evil.example' }),
      preflight: preflight.status,
      allowOrigin: preflight.headers.get('access-control-allow-origin'),
      form: await ask(dynamodb, listTables, { 'content-type': 'text/plain' }),
      rebound: await rebound(dynamodb),
    }).toEqual({ own: 200, origin: 403, preflight: 403, allowOrigin: null, form: 415, rebound: 403 });
  });

  it('fauxqs refuses a page (Origin, a form) and a rebound name; answers the SDK', async () => {
    const { sqs } = inject('endpoints');
    const listQueues = 'AmazonSQS.ListQueues';
    const form = await fetch(sqs, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=ListQueues',
    });
    expect({
      own: await ask(sqs, listQueues, {}),
      origin: await ask(sqs, listQueues, { origin: 'http://evil.example' }),
      form: form.status,
      rebound: await rebound(sqs),
    }).toEqual({ own: 200, origin: 403, form: 415, rebound: 403 });
  });
});
