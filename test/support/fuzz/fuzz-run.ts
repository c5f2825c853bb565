import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { possessionProof } from '../../../lib/clients/host/key-rotation.ts';
import { generateNodeKeys } from '../../../lib/clients/host/keys.ts';
import { startLocalApi } from '../../../lib/local/http-server.ts';
import { localPartsFor } from '../../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../../../lib/server/setup/config.ts';
import type { Parts } from '../../../lib/server/wiring/parts.ts';
import { sendRaw } from '../raw-http.ts';
import { tableContents } from '../table-contents.ts';
import { type FuzzCase, fuzzCases, validCases } from './fuzz-cases.ts';
import { fuzzModules, fuzzVersions, restoreWorld, type SeededWorld, seedWorld } from './fuzz-world.ts';
import { forgedProof, proofJti, validProof } from './host-proofs.ts';
import { fuzzedRoutes } from './route-requests.ts';
import { itemKey, type StoreChange, storeChange } from './store-change.ts';
import { strangerCases } from './stranger-cases.ts';

/** What one route (or every route) got: answers by class, and what refused requests wrote. */
export type RouteFigures = {
  cases: number;
  ok: number;
  refused: number;
  failed: number;
  /** Items written, changed or deleted by a request answered 4xx (goal 0). */
  writesByRefused: number;
  /** Replay-guard items of host requests refused after their proof verified: the one write allowed. */
  proofItemsByRefused: number;
};

export const noFigures = (): RouteFigures => ({
  cases: 0,
  ok: 0,
  refused: 0,
  failed: 0,
  writesByRefused: 0,
  proofItemsByRefused: 0,
});

/** A case that broke a rule, with everything needed to send it again. */
export type FuzzFailure = {
  readonly rule: '5xx' | 'no answer' | 'wrote while refusing' | 'forgery accepted' | 'stranger not refused';
  readonly fuzzCase: FuzzCase;
  readonly status: number | undefined;
  readonly answer: string;
  readonly change: StoreChange | undefined;
  readonly logged: string | undefined;
  readonly reproduction: string;
};

export type FuzzFigures = {
  readonly seed: number;
  readonly byRoute: Map<string, RouteFigures>;
  readonly byKind: Map<string, RouteFigures>;
  readonly failures: FuzzFailure[];
  readonly seconds: number;
};

export type FuzzOptions = {
  readonly config: MeshConfig;
  readonly cases: number;
  readonly seed: number;
  /** Stranger cases only (stranger-cases.ts): valid requests sent as this machine's clients never send them. */
  readonly strangers?: boolean;
  readonly onProgress?: (done: number, figures: FuzzFigures) => void;
};

const chunk = 250;

/**
 * Serves the local runtime's HTTP API in-process on the configuration's tables, seeds a small
 * mesh, then sends `cases` generated requests one after another, putting the mesh's shape back
 * between chunks (valid removals take it apart). After each request both tables are read whole
 * (strongly) and compared with before: a request answered 4xx must have changed nothing, save
 * the replay-guard item of a host request whose proof verified (its proof id, spent). No request may be answered 5xx, or not at all; no forged or replayed proof may pass.
 */
export async function fuzzRoutes(options: FuzzOptions): Promise<FuzzFigures> {
  const started = performance.now();
  let lastError: string | undefined;
  const log = {
    info: () => {},
    warn: () => {},
    error: (message: string, extra?: Record<string, unknown>) => {
      const cause = extra?.error as Error | undefined;
      lastError = `${message}${cause ? `: ${cause.stack ?? cause.message}` : ''}`;
    },
  };
  const parts = localPartsFor(options.config, { overrides: { log } });
  const api = await startLocalApi({ port: 0, parts });
  const reader = makeDynamoDBClient(options.config);
  const figures: FuzzFigures = {
    seed: options.seed,
    byRoute: new Map(),
    byKind: new Map(),
    failures: [],
    seconds: 0,
  };
  try {
    const world = await seedWorld(api.url);
    await recordBuilds(parts);
    const arbitrary = options.strangers
      ? strangerCases(validCases(fuzzedRoutes(), world))
      : fuzzCases(fuzzedRoutes(), world);
    let before = await tableContents(options.config, reader);
    let lastAccepted: Sent | undefined = await sendCase(api.url, world, {
      route: 'host-declaration',
      kind: 'valid',
      method: 'GET',
      path: `/hosts/${world.hosts[0]}/declaration`,
      headers: {},
      body: '',
      bodyEncoding: 'utf8',
      host: { signer: world.hosts[0] as string, proof: 'valid' },
    });
    before = await tableContents(options.config, reader);
    for (let done = 0; done < options.cases; done += chunk) {
      if (done > 0) {
        await restoreWorld(api.url);
        before = await tableContents(options.config, reader);
      }
      const cases = fc.sample(arbitrary, {
        seed: options.seed + done,
        numRuns: Math.min(chunk, options.cases - done),
      });
      for (const fuzzCase of cases) {
        lastError = undefined;
        const replay: Sent | undefined = fuzzCase.host?.proof === 'replay' ? lastAccepted : undefined;
        const prepared = await withLiveToken(api.url, fuzzCase);
        if (prepared !== fuzzCase) before = await tableContents(options.config, reader);
        const sent: Sent = replay
          ? await sendAgain(api.url, replay)
          : await sendCase(api.url, world, prepared);
        // a handler a raw connection's refusal did not stop would still be writing when it closed
        if (sent.fuzzCase.rawBytes !== undefined) await new Promise((resolve) => setTimeout(resolve, 150));
        const after = await tableContents(options.config, reader);
        const change = storeChange(before, after);
        before = after;
        const verdict = judge(sent, change, options.config.inventoryTable);
        tally(figures, sent.fuzzCase, sent.status, verdict);
        if (verdict.broken)
          figures.failures.push({
            rule: verdict.broken,
            fuzzCase: sent.fuzzCase,
            status: sent.status,
            answer: sent.answer.slice(0, 400),
            change: change.items > 0 ? change : undefined,
            logged: lastError,
            reproduction: reproduction(api.url, sent),
          });
        if (sent.fuzzCase.host && sent.status !== undefined && sent.status < 300 && !replay)
          lastAccepted = sent;
      }
      options.onProgress?.(Math.min(done + chunk, options.cases), figures);
    }
  } finally {
    reader.destroy();
    await api.stop();
  }
  return { ...figures, seconds: (performance.now() - started) / 1000 };
}

/**
 * Successful builds of every module at both versions, as the queue's consumer would have recorded
 * them (no consumer runs beside the fuzz), so a valid retraction finds a build to retract.
 */
async function recordBuilds(parts: Parts): Promise<void> {
  const now = new Date().toISOString();
  for (const module of fuzzModules)
    for (const version of fuzzVersions)
      await parts.builds.recordBuild(
        { id: `fuzz-${module}-${version}`, module, version, result: 'succeeded', finishedAt: now },
        { receivedAt: now, recordedAt: now },
        localActor(),
      );
}

type Sent = {
  readonly fuzzCase: FuzzCase;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly status: number | undefined;
  readonly answer: string;
};

/** Sends a case; a host case signed first as it says (a key rotation gets its new keys now). */
async function sendCase(api: string, world: SeededWorld, fuzzCase: FuzzCase): Promise<Sent> {
  const signing = fuzzCase.host;
  let body = fuzzCase.body;
  const headers: Record<string, string> = { ...fuzzCase.headers };
  let rotatedTo: Awaited<ReturnType<typeof generateNodeKeys>>['keys'] | undefined;
  if (signing) {
    const keys = world.keys.get(signing.signer);
    if (!keys) throw new Error(`fuzz: no keys for ${signing.signer}`);
    const signer = {
      node: signing.signer,
      keys,
      otherNode: world.hosts.find((host) => host !== signing.signer) ?? 'other',
    };
    if (signing.freshRotation) {
      ({ keys: rotatedTo } = await generateNodeKeys());
      body = JSON.stringify({
        keys: { signing: rotatedTo.signing.publicJwk, sealing: rotatedTo.sealing.publicJwk },
        possession: await possessionProof(signing.signer, rotatedTo, keys.thumbprint),
      });
    }
    const signed = { method: fuzzCase.method, path: fuzzCase.path, body: signing.signedBody ?? body };
    const authorization =
      signing.proof === 'valid' || signing.proof === 'replay'
        ? await validProof(signer, signed)
        : await forgedProof(signing.proof, signer, signed);
    if (authorization !== undefined) headers.authorization = authorization;
  }
  const made = { ...fuzzCase, body };
  const answer = await send(api, made, headers);
  if (rotatedTo && answer.status === 200) world.keys.set(signing?.signer as string, rotatedTo);
  return { fuzzCase: made, headers, body, ...answer };
}

/** An enrolment case given a token just issued for its node (a write of its own, before the case). */
async function withLiveToken(api: string, fuzzCase: FuzzCase): Promise<FuzzCase> {
  if (!fuzzCase.liveToken) return fuzzCase;
  const { node } = JSON.parse(fuzzCase.body) as { node: string };
  const issued = await send(
    api,
    { ...fuzzCase, method: 'POST', path: `/nodes/${node}/token`, body: '{}' },
    {},
  );
  if (issued.status !== 201) return fuzzCase;
  const { keys } = await generateNodeKeys();
  const body = JSON.stringify({
    node,
    token: (JSON.parse(issued.answer) as { token: string }).token,
    keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
  });
  return { ...fuzzCase, body };
}

/** The last accepted host request sent again exactly as it was, its proof included. */
async function sendAgain(api: string, accepted: Sent): Promise<Sent> {
  const host = { ...(accepted.fuzzCase.host as NonNullable<FuzzCase['host']>), proof: 'replay' as const };
  const fuzzCase = { ...accepted.fuzzCase, kind: 'replay', host };
  return { ...accepted, fuzzCase, ...(await send(api, fuzzCase, accepted.headers)) };
}

/**
 * One request over node:http, the path exactly as given (no client normalises it); a case of raw
 * bytes on a connection of its own. `{port}` in a header or the bytes is the server's port.
 */
async function send(
  api: string,
  fuzzCase: FuzzCase,
  sentHeaders: Record<string, string>,
): Promise<{ status: number | undefined; answer: string }> {
  const url = new URL(api);
  const withPort = (text: string) => text.replaceAll('{port}', url.port);
  if (fuzzCase.rawBytes !== undefined) {
    const { status, text } = await sendRaw(Number(url.port), withPort(fuzzCase.rawBytes), 200);
    return { status, answer: text.slice(text.indexOf('\r\n\r\n') + 4) };
  }
  const headers = Object.fromEntries(
    Object.entries(sentHeaders).map(([name, value]) => [name, withPort(value)]),
  );
  const payload = Buffer.from(fuzzCase.body, fuzzCase.bodyEncoding);
  return new Promise((resolve) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: fuzzCase.method,
        path: fuzzCase.path,
        headers: { ...headers, 'content-length': String(payload.length) },
        timeout: 15_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (data: Buffer) => chunks.push(data));
        response.on('end', () =>
          resolve({ status: response.statusCode, answer: Buffer.concat(chunks).toString('utf8') }),
        );
        response.on('error', () =>
          resolve({ status: response.statusCode, answer: '(the answer was cut off)' }),
        );
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer within 15 s')));
    request.on('error', (error) => resolve({ status: undefined, answer: `(${error.message})` }));
    request.end(payload);
  });
}

type Verdict = { readonly broken?: FuzzFailure['rule']; readonly proofItem: boolean; readonly wrote: number };

function judge(sent: Sent, change: StoreChange, inventory: string): Verdict {
  const { status, fuzzCase } = sent;
  if (status === undefined) return { broken: 'no answer', proofItem: false, wrote: change.items };
  if (status >= 500) return { broken: '5xx', proofItem: false, wrote: change.items };
  // A stranger's request is refused by the server itself, before any handler: its own answer, nothing written.
  if (fuzzCase.expected) {
    const refusedAsIt =
      status === fuzzCase.expected.status && sent.answer.includes(`"${fuzzCase.expected.code}"`);
    if (!refusedAsIt) return { broken: 'stranger not refused', proofItem: false, wrote: change.items };
    return change.items > 0
      ? { broken: 'wrote while refusing', proofItem: false, wrote: change.items }
      : { proofItem: false, wrote: 0 };
  }
  const proof = fuzzCase.host?.proof;
  const forged = proof !== undefined && proof !== 'valid';
  if (forged && status < 400) return { broken: 'forgery accepted', proofItem: false, wrote: change.items };
  if (status < 400) return { proofItem: false, wrote: 0 };
  // A host request refused after its proof verified has spent its proof id: that item only.
  const signer = fuzzCase.host?.signer;
  const jti = proofJti(sent.headers.authorization);
  const spent = !forged && signer && jti ? itemKey(inventory, `proof#${signer}#${jti}`, 'proof') : undefined;
  const proofItem = spent !== undefined && change.added.length === 1 && change.added[0] === spent;
  const others = change.items - (proofItem ? 1 : 0);
  if (others > 0) return { broken: 'wrote while refusing', proofItem, wrote: others };
  return { proofItem, wrote: 0 };
}

function tally(figures: FuzzFigures, fuzzCase: FuzzCase, status: number | undefined, verdict: Verdict) {
  const kind = kindGroup(fuzzCase);
  for (const [map, key] of [
    [figures.byRoute, fuzzCase.route],
    [figures.byKind, kind],
  ] as const) {
    const row = map.get(key) ?? noFigures();
    row.cases += 1;
    if (status === undefined || status >= 500) row.failed += 1;
    else if (status >= 400) row.refused += 1;
    else row.ok += 1;
    if (status !== undefined && status >= 400 && status < 500) row.writesByRefused += verdict.wrote;
    if (verdict.proofItem) row.proofItemsByRefused += 1;
    map.set(key, row);
  }
}

/** The kind of a case without its details: `valid`, `path`, `query`, `body`, `forged proof`, `stranger host`, … */
export const kindGroup = (fuzzCase: FuzzCase): string => fuzzCase.kind.split(':')[0] ?? fuzzCase.kind;

/** A curl command line that sends the case again (its proof, if any, will have gone stale); printf into nc for raw bytes. */
function reproduction(api: string, sent: Sent): string {
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  const raw = sent.fuzzCase.rawBytes;
  if (raw !== undefined) {
    const url = new URL(api);
    const escaped = raw
      .replaceAll('{port}', url.port)
      .replace(/[\\%]/g, (char) => `${char}${char}`)
      .replace(/\r/g, '\\r')
      .replace(/\n/g, '\\n');
    return `printf ${quote(escaped)} | nc ${url.hostname} ${url.port}`;
  }
  const headers = Object.entries(sent.headers).map(
    ([name, value]) => `-H ${quote(`${name}: ${value.length > 200 ? `${value.slice(0, 200)}…` : value}`)}`,
  );
  const body =
    sent.body.length > 300 ? `${sent.body.slice(0, 300)}… (${sent.body.length} characters)` : sent.body;
  return [
    `curl -X ${sent.fuzzCase.method}`,
    '--path-as-is',
    ...headers,
    body ? `--data-binary ${quote(body)}` : '',
    quote(`${api}${sent.fuzzCase.path}`),
  ]
    .filter(Boolean)
    .join(' ');
}
