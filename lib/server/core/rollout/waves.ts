import { RolloutUsageError } from './errors.ts';

/**
 * How a rollout is cut into waves and when it stops (docs/decisions/rollouts-in-waves.md).
 * A size is a count of nodes or a percentage of the rollout's nodes, and it is cumulative: it
 * says how many nodes have been sent once the wave is out, so `1,10%,100%` over 1,000 nodes is
 * waves of 1, 99 and 900. Whatever the sizes say, the last wave takes the rest.
 */
export type Share = { readonly count: number } | { readonly percent: number };

export type RolloutOptions = {
  readonly waves: readonly Share[];
  /** Failures the rollout bears before it halts; more than this halts it. @default 0 */
  readonly maxFailures: Share;
  /** How long a wave waits for its nodes to answer before the silent ones count as failures. */
  readonly waveTimeoutSeconds: number;
  /** Stop after each wave until `mesh rollout resume`. */
  readonly pause: boolean;
  /**
   * Take the change back when it halts, as `mesh rollout undo` does (an upgrade's only: its
   * version is what can be set back). Absent on records from before it existed: false.
   */
  readonly autoUndo?: boolean;
};

export const defaultWaveTimeoutSeconds = 600;
/** More waves than this is a typing error, not a plan. */
const maxWaves = 20;

const shareForm = /^(?:(\d{1,6})|(\d{1,3}(?:\.\d{1,2})?)%)$/;

function parseShare(text: string, what: string): Share {
  const match = shareForm.exec(text.trim());
  if (!match) throw new RolloutUsageError(`${what}: "${text}" is neither a count (3) nor a percentage (10%)`);
  if (match[1] !== undefined) return { count: Number(match[1]) };
  const percent = Number(match[2]);
  if (percent <= 0 || percent > 100)
    throw new RolloutUsageError(`${what}: ${text} is not a percentage in (0, 100]`);
  return { percent };
}

/** `--waves 1,10%,100%`: sizes that grow, each at least one node. */
export function parseWaves(text: string): Share[] {
  const parts = text.split(',');
  if (parts.length > maxWaves) throw new RolloutUsageError(`--waves: at most ${maxWaves} waves`);
  const shares = parts.map((part) => parseShare(part, '--waves'));
  for (const share of shares)
    if ('count' in share && share.count === 0) throw new RolloutUsageError('--waves: a wave of 0 nodes');
  const samekind = (a: Share, b: Share) => 'count' in a === 'count' in b;
  for (let i = 1; i < shares.length; i += 1) {
    const [before, now] = [shares[i - 1] as Share, shares[i] as Share];
    if (samekind(before, now) && sizeOf(now) <= sizeOf(before))
      throw new RolloutUsageError(
        `--waves: sizes are cumulative and must grow (${parts[i - 1]} then ${parts[i]})`,
      );
  }
  return shares;
}

const sizeOf = (share: Share) => ('count' in share ? share.count : share.percent);

/** `--max-failures N|P%`. */
export function parseMaxFailures(text: string): Share {
  if (text.trim() === '0') return { count: 0 };
  return parseShare(text, '--max-failures');
}

const durationForm = /^(\d{1,6})(s|m|h)?$/;
const unitSeconds = { s: 1, m: 60, h: 3600 } as const;

/** `--wave-timeout 10m` (s, m or h; seconds when bare), between 1 second and a day. */
export function parseWaveTimeout(text: string): number {
  const match = durationForm.exec(text.trim());
  if (!match)
    throw new RolloutUsageError(`--wave-timeout: "${text}" is not a duration such as 90s, 10m or 1h`);
  const seconds = Number(match[1]) * unitSeconds[(match[2] ?? 's') as keyof typeof unitSeconds];
  if (seconds < 1 || seconds > 86_400) throw new RolloutUsageError('--wave-timeout: between 1s and 24h');
  return seconds;
}

/** The options from what the CLI or a request gives, each with its default. */
export function rolloutOptions(given: {
  readonly waves: string;
  readonly maxFailures?: string | undefined;
  readonly waveTimeout?: string | undefined;
  readonly pause?: boolean | undefined;
  readonly autoUndo?: boolean | undefined;
}): RolloutOptions {
  return {
    waves: parseWaves(given.waves),
    maxFailures: given.maxFailures === undefined ? { count: 0 } : parseMaxFailures(given.maxFailures),
    waveTimeoutSeconds:
      given.waveTimeout === undefined ? defaultWaveTimeoutSeconds : parseWaveTimeout(given.waveTimeout),
    pause: given.pause ?? false,
    ...(given.autoUndo ? { autoUndo: true } : {}),
  };
}

/** How many of `total` nodes a share is: a percentage rounds up, so 1% of 10 is one node, never none. */
export const sharedOf = (share: Share, total: number) =>
  'count' in share ? Math.min(share.count, total) : Math.min(total, Math.ceil((share.percent * total) / 100));

/** The nodes cut into waves, in order; waves the sizes leave empty are dropped, the last takes the rest. */
export function cutWaves(nodes: readonly string[], shares: readonly Share[]): string[][] {
  const waves: string[][] = [];
  let sent = 0;
  shares.forEach((share, index) => {
    const last = index === shares.length - 1;
    const upTo = last ? nodes.length : Math.max(sharedOf(share, nodes.length), sent);
    if (upTo > sent) waves.push(nodes.slice(sent, upTo));
    sent = Math.max(sent, upTo);
  });
  return waves;
}

/** The failures a rollout of `total` nodes bears: a percentage rounds down, so 10% of 5 bears none. */
export const failuresBorne = (share: Share, total: number) =>
  'count' in share ? share.count : Math.floor((share.percent * total) / 100);

export const shareText = (share: Share) => ('count' in share ? String(share.count) : `${share.percent}%`);
