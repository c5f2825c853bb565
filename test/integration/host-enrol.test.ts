import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { parseToken } from '../../lib/server/core/enrolment/token.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { watch } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let config: MeshConfig;
let api: RunningApi;
let fixture: ReturnType<typeof enrolmentFixture>;
let root: string;

beforeAll(async () => {
  config = await provisionTestResources('hostenrol');
  fixture = enrolmentFixture(config);
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  root = mkdtempSync(join(tmpdir(), 'mesh-host-enrol-'));
});

afterAll(async () => {
  await api?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Each test's token files go when it ends: a token is kept no longer than its enrol needs it. */
afterEach(() => rmSync(join(root, 'tokens'), { recursive: true, force: true }));

/** TEXT in an owner-only file, as `mesh token issue --out` leaves one; `--token-file` takes it. */
function tokenFileHolding(name: string, text: string): string {
  mkdirSync(join(root, 'tokens'), { recursive: true, mode: 0o700 });
  const file = join(root, 'tokens', `${name}.token`);
  writeFileSync(file, `${text}\n`, { mode: 0o600 });
  return file;
}

/** A token for a new NODE, and the file that holds it: never on a command line. */
async function tokenFor(node: string) {
  await fixture.addNode(node);
  const answer = await fetch(`${api.url}/nodes/${node}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const { token } = (await answer.json()) as { token: string };
  return { token, tokenFile: tokenFileHolding(node, token) };
}

async function hostCommand(args: string[]) {
  const child = watch(process.execPath, ['bin/mesh-host.ts', ...args]);
  const { code } = await child.exited();
  return { code, output: child.output() };
}

const meshHost = (args: string[]) => hostCommand(['enrol', ...args]);

describe('mesh-host enrol', () => {
  it('enrols, keeps the keys owner-only, and on a second run with the same DIR gets the same success', async () => {
    const { token, tokenFile } = await tokenFor('web-1');
    const dir = join(root, 'web-1');

    const first = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-1',
      '--token-file',
      tokenFile,
      '--dir',
      dir,
    ]);
    const again = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-1',
      '--token-file',
      tokenFile,
      '--dir',
      dir,
    ]);

    expect(first.code).toBe(ExitCode.ok);
    expect(first.output).toMatch(/enrolled web-1 at /);
    expect(again.code).toBe(ExitCode.ok);
    expect(statSync(join(dir, 'signing.jwk')).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(first.output).not.toContain(token.split('_')[2]);
  });

  it('is refused, with the reason, for a token spent by other keys', async () => {
    const { tokenFile } = await tokenFor('web-2');
    await meshHost([
      '--api',
      api.url,
      '--node',
      'web-2',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-2a'),
    ]);

    const other = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-2',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-2b'),
    ]);

    expect(other.code).toBe(ExitCode.enrolRefused);
    expect(other.output).toContain('token_spent');
  });

  it('says how long to wait when its patience runs out on a held token', async () => {
    const { token, tokenFile } = await tokenFor('web-3');
    const { tokenId, secretHash } = parseToken(token);
    const leaseUntilMs = Date.now() + 30_000;
    await fixture.tokens.claim({
      node: 'web-3',
      tokenId,
      secretHash,
      presenter: 'someone-else',
      nowMs: Date.now(),
      leaseUntilMs,
    });

    const held = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-3',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-3'),
      '--patience',
      '1',
    ]);

    expect(held.code).toBe(ExitCode.waitThenRetry);
    // the lease's time left when the answer came: a slow start of the process leaves less of it
    const said = Number(/wait (\d+) s before running enrol again/.exec(held.output)?.[1]);
    expect(said).toBeLessThanOrEqual(30);
    expect(said).toBeGreaterThanOrEqual(Math.floor((leaseUntilMs - Date.now()) / 1000));
  });

  it('exits 6 when nothing listens at --api, and 2 on a malformed token', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const { tokenFile } = await tokenFor('web-4');

    const unreachable = await meshHost([
      '--api',
      nobody,
      '--node',
      'web-4',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-4'),
    ]);
    const malformed = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-4',
      '--token-file',
      tokenFileHolding('malformed', 'mesh_nope'),
      '--dir',
      join(root, 'web-4'),
    ]);

    expect(unreachable.code).toBe(ExitCode.unavailable);
    expect(malformed.code).toBe(ExitCode.usage);
  });

  it('asks again after a 500 and, its patience spent, says to wait (7) — a failure is not a refusal', async () => {
    const failing = createServer((_request, response) => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'internal', message: 'internal error' } }));
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const { port } = failing.address() as { port: number };
    const { tokenFile } = await tokenFor('web-5');

    const failed = await meshHost([
      '--api',
      `http://127.0.0.1:${port}`,
      '--node',
      'web-5',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-5'),
      '--patience',
      '1',
    ]).finally(() => new Promise((resolve) => failing.close(resolve)));

    expect(failed.code).toBe(ExitCode.waitThenRetry);
    expect(failed.output).toMatch(/wait 2 s before running enrol again/);
    expect(failed.output).not.toContain('refused');
  });

  it('exits 6 when the --api name does not resolve', async () => {
    const { tokenFile } = await tokenFor('web-6');

    const unresolved = await meshHost([
      '--api',
      'http://mesh-control-plane.invalid',
      '--node',
      'web-6',
      '--token-file',
      tokenFile,
      '--dir',
      join(root, 'web-6'),
    ]);

    expect(unresolved.code).toBe(ExitCode.unavailable);
    expect(unresolved.output).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });
});

describe('a host directory whose files are damaged', () => {
  it('makes mesh-host run say it holds no enrolment (2), for a cut-short enrolment.json or key file', async () => {
    const { tokenFile } = await tokenFor('web-7');
    const dir = join(root, 'web-7');
    await meshHost(['--api', api.url, '--node', 'web-7', '--token-file', tokenFile, '--dir', dir]);
    const enrolment = readFileSync(join(dir, 'enrolment.json'), 'utf8');
    const signing = readFileSync(join(dir, 'signing.jwk'), 'utf8');
    const run = () => hostCommand(['run', '--dir', dir, '--apply', 'true']);

    writeFileSync(join(dir, 'enrolment.json'), enrolment.slice(0, 20));
    const cutEnrolment = await run();
    writeFileSync(join(dir, 'enrolment.json'), JSON.stringify({ node: 'web-7' }));
    const partialEnrolment = await run();
    writeFileSync(join(dir, 'enrolment.json'), enrolment);
    writeFileSync(join(dir, 'signing.jwk'), signing.slice(0, 10));
    const cutKey = await run();

    for (const outcome of [cutEnrolment, partialEnrolment, cutKey]) {
      expect(outcome.code).toBe(ExitCode.usage);
      expect(outcome.output).toContain('holds no enrolment');
      expect(outcome.output).not.toMatch(/\n\s+at /);
    }
  });

  it('makes mesh-host enrol refuse (2) rather than replace key files it cannot read', async () => {
    const { tokenFile } = await tokenFor('web-8');
    const dir = join(root, 'web-8');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'signing.jwk'), '{"kty":"OKP"');
    writeFileSync(join(dir, 'sealing.jwk'), '{}');

    const refused = await meshHost([
      '--api',
      api.url,
      '--node',
      'web-8',
      '--token-file',
      tokenFile,
      '--dir',
      dir,
    ]);

    expect(refused.code).toBe(ExitCode.usage);
    expect(refused.output).toContain('cannot be read');
    expect(readFileSync(join(dir, 'signing.jwk'), 'utf8')).toBe('{"kty":"OKP"');
  });
});
