import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ControlPlaneUnavailableError,
  CredentialRefusedError,
  SequenceAheadRefusedError,
} from '../../lib/clients/host/agent/errors.ts';
import { HttpControlPlane } from '../../lib/clients/host/agent/http-control-plane.ts';
import { sendEnrolment } from '../../lib/clients/host/enrol.ts';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostRequestSigner } from '../../lib/clients/host/proof.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let api: RunningApi;
let keys: NodeKeys;

beforeAll(async () => {
  const config = await provisionTestResources('hosthttp');
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  await enrolmentFixture(config).addNode('edge-1');
  const issued = await fetch(`${api.url}/nodes/edge-1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const { token } = (await issued.json()) as { token: string };
  keys = (await generateNodeKeys()).keys;
  const enrolled = await fetch(`${api.url}/enrol`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      node: 'edge-1',
      token,
      keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
    }),
  });
  expect(enrolled.status).toBe(200);
});

afterAll(async () => {
  await api?.stop();
});

const controlPlaneAt = (url: string, signWith = keys, timeoutMs?: number) =>
  new HttpControlPlane(
    hostApiClient(url, signingKeyOf('edge-1', signWith), timeoutMs ? { timeoutMs } : {}),
    'edge-1',
  );

/** A server on this machine that answers every request with RESPOND, and keeps what it was sent. */
async function serverThat(
  respond: (request: IncomingMessage, body: string) => [number, Record<string, string>, string] | undefined,
) {
  const seen: Array<{ method: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      seen.push({ method: request.method ?? '', headers: request.headers, body });
      const answer = respond(request, body);
      if (!answer) return; // never answers
      response.writeHead(answer[0], answer[1]).end(answer[2]);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    stop: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the agent over node:http', () => {
  it('asks the control plane with requests its key proves: no declaration yet, a report taken', async () => {
    const controlPlane = controlPlaneAt(api.url);

    const fetched = await controlPlane.fetchDeclaration(undefined);
    await controlPlane.sendReport({
      sequence: 1,
      state: 'heartbeat',
      revision: 0,
      sentAt: new Date().toISOString(),
    });

    expect(fetched).toEqual({ status: 'not-sent' });
  });

  it('hears a report far ahead of the clock refused, with the largest sequence taken now', async () => {
    const before = Date.now();

    const failure = await controlPlaneAt(api.url)
      .sendReport({ sequence: 9e15, state: 'heartbeat', revision: 0, sentAt: new Date().toISOString() })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(SequenceAheadRefusedError);
    expect((failure as SequenceAheadRefusedError).message).toMatch(
      /422 sequence_ahead: report 9000000000000000/,
    );
    expect((failure as SequenceAheadRefusedError).latestAccepted).toBeGreaterThanOrEqual(before + 600_000);
  });

  it('a key the node did not enrol is refused', async () => {
    const other = (await generateNodeKeys()).keys;

    await expect(controlPlaneAt(api.url, other).fetchDeclaration(undefined)).rejects.toBeInstanceOf(
      CredentialRefusedError,
    );
  });

  it('signs with the key it is given after a rotation (useSigner), and only with it', async () => {
    const other = (await generateNodeKeys()).keys;
    const client = hostApiClient(api.url, signingKeyOf('edge-1', other));
    const declaration = () => client.send('GET', '/hosts/edge-1/declaration');

    const before = await declaration();
    client.useSigner(hostRequestSigner(signingKeyOf('edge-1', keys)));
    const after = await declaration();

    expect([before.status, after.status]).toEqual([401, 404]);
    expect((after.body as { error: { code: string } }).error.code).toBe('not_sent');
  });

  it('sends JSON with its length and the proof, and reads a try-again answer that is not JSON', async () => {
    const server = await serverThat(() => [
      503,
      { 'Retry-After': '7', 'content-type': 'text/html' },
      '<h1>busy</h1>',
    ]);
    try {
      const failure = await controlPlaneAt(server.url)
        .sendReport({ sequence: 2, state: 'applied', revision: 3, sentAt: '2026-12-01T00:00:00.000Z' })
        .catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(ControlPlaneUnavailableError);
      expect(failure).toMatchObject({
        retryAfterSeconds: 7,
        message: expect.stringContaining('503 not_json'),
      });
      const [request] = server.seen;
      expect(request?.method).toBe('POST');
      expect(JSON.parse(request?.body ?? '')).toMatchObject({ sequence: 2, state: 'applied', revision: 3 });
      expect(request?.headers['content-length']).toBe(String(Buffer.byteLength(request?.body ?? '')));
      expect(request?.headers.authorization).toMatch(/^MeshPoP [\w-]+\.[\w-]+\.[\w-]+$/);
    } finally {
      await server.stop();
    }
  });

  it('never touches fetch, whose undici parser would keep an idle agent about 15 MB larger: reports and enrolment go over node:http', async () => {
    const server = await serverThat(() => [
      409,
      { 'Retry-After': '4', 'content-type': 'application/json' },
      '{}',
    ]);
    const untouchable = (name: string) =>
      function touched() {
        throw new Error(`the host's client used ${name}`);
      };
    for (const name of ['fetch', 'Request', 'Response', 'Headers']) vi.stubGlobal(name, untouchable(name));
    try {
      const reported = await hostApiClient(server.url, signingKeyOf('edge-1', keys)).send(
        'POST',
        '/hosts/edge-1/reports',
        { sequence: 3 },
      );
      const enrolment = await sendEnrolment(server.url, { node: 'edge-1' });

      expect(reported.status).toBe(409);
      expect(enrolment).toMatchObject({ kind: 'answer', status: 409, retryAfter: '4' });
      expect(server.seen.map((request) => request.method)).toEqual(['POST', 'POST']);
    } finally {
      vi.unstubAllGlobals();
      await server.stop();
    }
  });

  it('says the control plane is away when nothing listens, and when it does not answer in time', async () => {
    const silent = await serverThat(() => undefined);
    try {
      const refused = await controlPlaneAt(`http://127.0.0.1:${await freePort()}`)
        .fetchDeclaration(undefined)
        .catch((error: unknown) => error);
      const timedOut = await controlPlaneAt(silent.url, keys, 300)
        .fetchDeclaration(undefined)
        .catch((error: unknown) => error);

      expect(refused).toBeInstanceOf(ControlPlaneUnavailableError);
      expect((refused as Error).message).toContain('ECONNREFUSED');
      expect(timedOut).toBeInstanceOf(ControlPlaneUnavailableError);
      expect((timedOut as Error).message).toContain('no answer in 0.3 s');
    } finally {
      await silent.stop();
    }
  });
});
