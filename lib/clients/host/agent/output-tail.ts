import { isControlCharacter, maxOutputBytes, maxReasonChars } from '../../../server/core/health.ts';
import { isSecretName } from '../../../server/core/views/views.ts';

/**
 * What leaves the host of a command's output: its end, with every secret of the declaration
 * redacted, in clear and in the encodings a hook or a check may print it in, and no control
 * character (docs/host-agent.md, "What leaves the node").
 */

export const redacted = '[redacted]';

/** Secrets this short are redacted only as they are: their encodings would match ordinary text. */
const encodedFrom = 6;

/**
 * Every string a declaration holds under a member named like a secret (`secret`, `password`,
 * `token`…, as `mesh node show` hides them), at any depth: the opened secrets of its provisions
 * and grants, and any secret a field added later holds.
 */
export function secretsOf(declaration: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(declaration);
  } catch {
    return [];
  }
  const found = new Set<string>();
  const walk = (value: unknown, secret: boolean) => {
    if (typeof value === 'string') {
      if (secret && value.length > 0) found.add(value);
    } else if (Array.isArray(value)) {
      for (const member of value) walk(member, secret);
    } else if (value !== null && typeof value === 'object') {
      for (const [name, member] of Object.entries(value)) walk(member, secret || isSecretName(name));
    }
  };
  walk(parsed, false);
  return [...found];
}

/**
 * The forms a secret may be printed in: as it is; JSON- and URL-escaped; hexadecimal, either
 * case; base64 and base64url, padded or not, alone or at any of the three offsets inside a longer
 * encoded text (the characters that depend on its neighbours left off), so `Basic dXNlcjpz…`
 * is caught as well as the secret encoded alone.
 */
export function formsOf(secret: string): string[] {
  const forms = new Set([secret]);
  if (secret.length >= encodedFrom) {
    const bytes = Buffer.from(secret, 'utf8');
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(encodeURIComponent(secret));
    forms.add(bytes.toString('hex'));
    forms.add(bytes.toString('hex').toUpperCase());
    for (const offset of [0, 1, 2]) {
      const encoded = Buffer.concat([Buffer.alloc(offset), bytes])
        .toString('base64')
        .replace(/=+$/, '');
      const core = encoded.slice(Math.ceil((offset * 4) / 3), Math.floor(((offset + bytes.length) * 4) / 3));
      if (core.length < encodedFrom) continue;
      forms.add(core);
      forms.add(core.replaceAll('+', '-').replaceAll('/', '_'));
    }
    forms.add(bytes.toString('base64'));
    forms.add(bytes.toString('base64url'));
  }
  return [...forms].filter((form) => form.length > 0);
}

/**
 * Redacts a declaration's secrets from text. Built once per declaration; each redaction costs
 * the text's length times the number of distinct form lengths (a node's minted secrets share
 * theirs), whatever the number of secrets: a broker of 10,000 grants costs as one of ten.
 */
export class Redactor {
  readonly #byLength = new Map<number, Set<string>>();
  /** The longest form: an occurrence ending in a text's last N characters starts at most this far before them. */
  readonly longest: number;

  constructor(secrets: Iterable<string>) {
    for (const secret of secrets)
      for (const form of formsOf(secret)) {
        const same = this.#byLength.get(form.length) ?? new Set<string>();
        same.add(form);
        this.#byLength.set(form.length, same);
      }
    this.longest = Math.max(0, ...this.#byLength.keys());
  }

  redact(text: string): string {
    if (this.#byLength.size === 0) return text;
    // Marks every character an occurrence of a form covers, longest forms first, then joins each run.
    const covered = new Uint8Array(text.length);
    let any = false;
    for (const [length, forms] of this.#byLength) {
      for (let at = 0; at + length <= text.length; at += 1) {
        if (!forms.has(text.slice(at, at + length))) continue;
        covered.fill(1, at, at + length);
        any = true;
      }
    }
    if (!any) return text;
    let out = '';
    for (let at = 0; at < text.length; ) {
      if (!covered[at]) {
        out += text[at];
        at += 1;
        continue;
      }
      while (at < text.length && covered[at]) at += 1;
      out += redacted;
    }
    return out;
  }
}

/**
 * The end of a command's output as it may leave the host: redacted first (from a window that
 * holds every occurrence reaching into the end), then control characters shown as `?`, then cut
 * to at most `maxBytes` of UTF-8 at a character's start, `…` before it when cut. Undefined for
 * output that is empty or only space.
 */
export function tailOf(output: string, redactor: Redactor, maxBytes = maxOutputBytes): string | undefined {
  // A tail of maxBytes bytes is at most maxBytes characters; an occurrence reaching into it
  // starts at most `longest` characters before.
  const window = output.slice(-(maxBytes + redactor.longest));
  const clean = [...redactor.redact(window)]
    .map((char) => (isControlCharacter(char.charCodeAt(0)) && char !== '\r' ? '?' : char))
    .join('')
    .replaceAll('\r\n', '\n')
    .replaceAll('\r', '\n');
  if (clean.trim() === '') return undefined;
  return cutToBytes(clean, maxBytes);
}

/** The end of text in at most maxBytes of UTF-8, cut at a character's start, with `…` when cut. */
export function cutToBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const marker = '…';
  const room = maxBytes - Buffer.byteLength(marker, 'utf8');
  const chars = [...text];
  let bytes = 0;
  let from = chars.length;
  while (from > 0) {
    const size = Buffer.byteLength(chars[from - 1] ?? '', 'utf8');
    if (bytes + size > room) break;
    bytes += size;
    from -= 1;
  }
  return `${marker}${chars.slice(from).join('')}`;
}

/**
 * The apply command's and the check's tails together within `maxOutputBytes`: each keeps what
 * it has up to half, and one shorter than its half leaves the rest to the other.
 */
export function fitTails(
  apply: string | undefined,
  check: string | undefined,
): { apply?: string; check?: string } {
  const size = (text: string | undefined) => (text === undefined ? 0 : Buffer.byteLength(text, 'utf8'));
  const half = Math.floor(maxOutputBytes / 2);
  const applyRoom = Math.max(half, maxOutputBytes - size(check));
  const fittedApply =
    apply === undefined ? undefined : cutToBytes(apply, Math.min(applyRoom, maxOutputBytes));
  const fittedCheck = check === undefined ? undefined : cutToBytes(check, maxOutputBytes - size(fittedApply));
  return {
    ...(fittedApply ? { apply: fittedApply } : {}),
    ...(fittedCheck ? { check: fittedCheck } : {}),
  };
}

/** The first line of an output worth naming, for a reason: at most `maxReasonChars` (UTF-16 units, as the schema counts). */
export function firstLine(output: string | undefined): string | undefined {
  const line = output
    ?.split('\n')
    .map((text) => text.trim())
    .find((text) => text !== '' && text !== '…');
  if (!line) return undefined;
  const chars = [...line.replace(/^…/, '')].slice(0, maxReasonChars);
  while (chars.join('').length > maxReasonChars) chars.pop();
  return chars.join('') || undefined;
}
