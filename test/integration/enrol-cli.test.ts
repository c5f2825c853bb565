import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { tokenPattern } from '../../lib/server/core/enrolment/token.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let config: MeshConfig;
let api: RunningApi;
let fixture: ReturnType<typeof enrolmentFixture>;

beforeAll(async () => {
  config = await provisionTestResources('enrolcli');
  fixture = enrolmentFixture(config);
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  await fixture.addNode('db-1');
});

afterAll(async () => {
  await api?.stop();
});

const mesh = (args: string[]) => runMesh(api.url, args);

describe('mesh token', () => {
  it('issue prints the token once on stdout; --json gives one document; a new one replaces the old', async () => {
    const plain = await mesh(['token', 'issue', 'db-1', '--ttl', '2h']);
    const json = await mesh(['--json', 'token', 'issue', 'db-1']);

    expect(plain.code).toBe(ExitCode.ok);
    expect(plain.stdout.trim()).toMatch(tokenPattern);
    const issued = JSON.parse(json.stdout) as { node: string; token: string; replaced: string | null };
    expect(issued).toMatchObject({ node: 'db-1', token: expect.stringMatching(tokenPattern) });
    expect(issued.replaced).toBe(plain.stdout.trim().split('_')[1]);
  });

  it('revoke revokes the live token; an unknown node is exit 3', async () => {
    await mesh(['token', 'issue', 'db-1']);

    const revoked = await mesh(['--json', 'token', 'revoke', 'db-1']);
    const unknown = await mesh(['token', 'issue', 'no-such-node']);

    expect(revoked.code).toBe(ExitCode.ok);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ node: 'db-1', revokedAt: expect.any(String) });
    expect(unknown.code).toBe(ExitCode.notFound);
    expect(unknown.output).toContain('there is no node no-such-node');
  });
});
