import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadOrCreateNodeKeys } from '../../lib/clients/host/keys.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('loadOrCreateNodeKeys', () => {
  it('keeps the private keys owner-only in DIR and presents the same keys on the next run', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'mesh-host-')), 'keys');
    dirs.push(dirname(dir));

    const first = await loadOrCreateNodeKeys(dir);
    const second = await loadOrCreateNodeKeys(dir);

    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['signing.jwk', 'sealing.jwk']) {
      expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(join(dir, file), 'utf8'))).toHaveProperty('d');
    }
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.keys.thumbprint).toBe(first.keys.thumbprint);
    expect(first.keys.signing.publicJwk).not.toHaveProperty('d');
    expect(first.keys.sealing.publicJwk).not.toHaveProperty('d');
  });
});

function dirname(path: string) {
  return path.slice(0, path.lastIndexOf('/'));
}
