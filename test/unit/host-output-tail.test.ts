import { describe, expect, it } from 'vitest';
import {
  cutToBytes,
  firstLine,
  fitTails,
  Redactor,
  redacted,
  secretsOf,
  tailOf,
} from '../../lib/clients/host/agent/output-tail.ts';
import { maxOutputBytes, reportedOutput } from '../../lib/server/core/health.ts';

const secret = 'k7Q2-vX9pL0wZr4TnB8yH1sD6fG3jM5c';
const declaration = JSON.stringify({
  node: 'web1',
  modules: [{ name: 'app', version: '1.0' }],
  provisions: [{ module: 'app', provider: { node: 'db', module: 'pg' }, secret, kind: 'pg' }],
  grants: [{ module: 'pg', consumer: { node: 'api', module: 'app' }, secret: 'grant-secret-0042' }],
  settings: { adminPassword: 'hunter2hunter2', note: 'not a secret' },
});

describe('secretsOf', () => {
  it('finds every value under a member named like a secret, at any depth, and nothing else', () => {
    expect(secretsOf(declaration).sort()).toEqual([secret, 'grant-secret-0042', 'hunter2hunter2'].sort());
    expect(secretsOf('not json')).toEqual([]);
  });
});

describe('Redactor', () => {
  const redactor = new Redactor(secretsOf(declaration));
  const bytes = Buffer.from(secret);

  it.each([
    ['plain', `password=${secret}`],
    ['JSON-escaped', JSON.stringify({ s: secret })],
    ['URL-encoded', `?key=${encodeURIComponent(secret)}`],
    ['hex', `key: ${bytes.toString('hex')}`],
    ['HEX', `key: ${bytes.toString('hex').toUpperCase()}`],
    ['base64', `key: ${bytes.toString('base64')}`],
    ['base64url', `key: ${bytes.toString('base64url')}`],
    [
      'base64 of user:secret (offset 1)',
      `Authorization: Basic ${Buffer.from(`u:${secret}`).toString('base64')}`,
    ],
    ['base64 at offset 2', Buffer.from(`ab${secret}xyz`).toString('base64')],
    ['base64 at offset 0 inside more', Buffer.from(`abc${secret}q`).toString('base64')],
    ['a grant’s secret', 'CREATE USER app PASSWORD grant-secret-0042;'],
    ['a secret-named setting', 'admin: hunter2hunter2'],
  ])('removes the secret printed %s', (_form, text) => {
    const out = redactor.redact(text);
    expect(out).toContain(redacted);
    for (const leak of [secret, 'grant-secret-0042', 'hunter2hunter2'])
      expect(out.toLowerCase()).not.toContain(leak.toLowerCase());
    expect(out).not.toContain(bytes.toString('hex'));
    // No run of the encoded secret's middle is left either.
    expect(out).not.toContain(bytes.toString('base64').slice(8, 24));
  });

  it('leaves text without a secret as it is, and keeps what surrounds one', () => {
    expect(redactor.redact('nginx: reloaded, 3 workers')).toBe('nginx: reloaded, 3 workers');
    expect(redactor.redact(`before ${secret} after`)).toBe(`before ${redacted} after`);
    expect(redactor.redact(`${secret}${secret}`)).toBe(redacted);
  });

  it('costs the text times the distinct lengths of its forms, not the number of secrets', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => `grant-secret-${String(i).padStart(8, '0')}-x`);
    const started = performance.now();
    const big = new Redactor(many);
    const text = `${'x'.repeat(4000)} grant-secret-00009999-x ${'y'.repeat(4000)}`;
    const out = big.redact(text);
    expect(out).toContain(redacted);
    expect(out).not.toContain('grant-secret-00009999-x');
    // Correctness is what is asserted; the time is only a guard against a quadratic matcher.
    expect(performance.now() - started).toBeLessThan(30_000);
  });
});

describe('tailOf', () => {
  const redactor = new Redactor([secret]);

  it('keeps the end within the bound, at a character, marked as cut; a secret across the cut is never half left', () => {
    const long = `${'é'.repeat(5000)}\nthe end`;
    const tail = tailOf(long, redactor, 100) ?? '';
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(100);
    expect(tail.startsWith('…')).toBe(true);
    expect(tail.endsWith('the end')).toBe(true);
    // The secret straddles where a naive cut would fall: its end is in the last 100 bytes.
    const straddling = `${'a'.repeat(1000)}${secret}${'b'.repeat(90)}`;
    const cut = tailOf(straddling, redactor, 100) ?? '';
    expect(cut).not.toContain(secret.slice(-8));
    expect(cut).toContain(redacted.slice(-4));
  });

  it('shows control characters as ? and turns CR into newlines; nothing for empty output', () => {
    expect(tailOf('\u001b[31mred\u001b[0m\r\nnext\rline\u0007', redactor)).toBe('?[31mred?[0m\nnext\nline?');
    expect(tailOf('  \n\t', redactor)).toBeUndefined();
    const shown = tailOf('a\u001b\u009bb', redactor) ?? '';
    expect(reportedOutput.safeParse({ check: shown }).success).toBe(true);
  });
});

describe('fitTails and firstLine', () => {
  it('share 4 KiB between the apply command and the check, the shorter leaving its room to the other', () => {
    const big = 'a'.repeat(5000);
    const small = 'b'.repeat(100);
    const both = fitTails(big, big);
    expect(Buffer.byteLength(both.apply ?? '')).toBeLessThanOrEqual(maxOutputBytes / 2);
    expect(Buffer.byteLength(both.check ?? '')).toBeLessThanOrEqual(maxOutputBytes / 2);
    const checkShort = fitTails(big, small);
    expect(checkShort.check).toBe(small);
    expect(Buffer.byteLength(checkShort.apply ?? '') + 100).toBeLessThanOrEqual(maxOutputBytes);
    expect(Buffer.byteLength(checkShort.apply ?? '')).toBeGreaterThan(maxOutputBytes - 200);
    expect(fitTails(undefined, big).check?.length).toBeGreaterThan(maxOutputBytes - 10);
    for (const fitted of [
      both,
      checkShort,
      fitTails(small, big),
      fitTails('é'.repeat(3000), 'ü'.repeat(3000)),
    ])
      expect(reportedOutput.safeParse(fitted).success).toBe(true);
  });

  it('names the first line worth naming, bounded', () => {
    expect(firstLine('\n  \ncurl: (7) Failed to connect\nmore')).toBe('curl: (7) Failed to connect');
    expect(firstLine('…tail of a long line\nnext')).toBe('tail of a long line');
    expect(firstLine('')).toBeUndefined();
    expect(firstLine('x'.repeat(500))?.length).toBe(200);
    expect(firstLine('😀'.repeat(150))?.length).toBeLessThanOrEqual(200);
    expect(cutToBytes('abc', 10)).toBe('abc');
  });
});
