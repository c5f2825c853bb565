import {
  defaultFirewallLimits,
  enrolPathPattern,
  firewallRetryAfterSeconds,
  firewallWindowSeconds,
  throttledBody,
} from '../deploy/firewall-limits.ts';

/** What the stand-in counts: the deployed firewall's limits, and a window a bed may shorten. */
export type LocalFirewallLimits = {
  readonly enrolPerAddress: number;
  readonly requestsPerAddress: number;
  readonly windowSeconds: number;
  readonly retryAfterSeconds: number;
};

export const deployedFirewallLimits: LocalFirewallLimits = {
  ...defaultFirewallLimits,
  windowSeconds: firewallWindowSeconds,
  retryAfterSeconds: firewallRetryAfterSeconds,
};

/**
 * `MESH_LOCAL_FIREWALL`: `on` answers as the deployed firewall does; `enrol=N,requests=N,window=S`
 * changes any of its limits (a bed's short window; Retry-After is the smaller of 60 s and the
 * window). Undefined when unset or `off`; a string saying what is wrong when it cannot be read.
 */
export function localFirewallLimits(setting: string | undefined): LocalFirewallLimits | undefined | string {
  const text = setting?.trim() ?? '';
  if (text === '' || text === 'off') return undefined;
  if (text === 'on') return deployedFirewallLimits;
  const given: Record<string, number> = {};
  for (const part of text.split(',')) {
    const match = /^(enrol|requests|window)=([1-9]\d{0,9})$/.exec(part.trim());
    if (!match) return `MESH_LOCAL_FIREWALL: "${part.trim()}" is not enrol=N, requests=N or window=SECONDS`;
    given[match[1] as string] = Number(match[2]);
  }
  const windowSeconds = given.window ?? firewallWindowSeconds;
  return {
    enrolPerAddress: given.enrol ?? defaultFirewallLimits.enrolPerAddress,
    requestsPerAddress: given.requests ?? defaultFirewallLimits.requestsPerAddress,
    windowSeconds,
    retryAfterSeconds: Math.min(firewallRetryAfterSeconds, windowSeconds),
  };
}

/** The answer to a request over a limit: 429 with Retry-After, the body the web ACL sends. */
export type FirewallRefusal = {
  readonly status: 429;
  readonly retryAfterSeconds: number;
  readonly body: string;
};

/** One rule's count of each address's requests over the last window, oldest first. */
class SlidingCount {
  readonly #times = new Map<string, number[]>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Counts the request, and says whether the address is over the limit with it. */
  countAndCheck(address: string, now: number): boolean {
    const times = this.#times.get(address) ?? [];
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= now - this.#windowMs) expired += 1;
    if (expired > 0) times.splice(0, expired);
    times.push(now);
    this.#times.set(address, times);
    return times.length > this.#limit;
  }
}

/**
 * The local runtime's stand-in for the API's web ACL (lib/deploy/api-firewall.ts): each source
 * address's requests counted over a sliding window, refused ones too (a rate-based rule counts
 * every request that matches it), one count for `POST …/enrol` and one for every route; an address
 * over either limit is answered 429 `THROTTLED` with Retry-After until its count falls under.
 */
export class LocalFirewall {
  readonly #limits: LocalFirewallLimits;
  readonly #enrol: SlidingCount;
  readonly #requests: SlidingCount;
  readonly #enrolPath = new RegExp(enrolPathPattern);

  constructor(limits: LocalFirewallLimits) {
    this.#limits = limits;
    this.#enrol = new SlidingCount(limits.enrolPerAddress, limits.windowSeconds * 1000);
    this.#requests = new SlidingCount(limits.requestsPerAddress, limits.windowSeconds * 1000);
  }

  /** Counts one request; a refusal when its address is over a limit. */
  admit(address: string, path: string, now = Date.now()): FirewallRefusal | undefined {
    const pathOnly = path.split('?')[0] ?? path;
    const overEnrol = this.#enrolPath.test(pathOnly) && this.#enrol.countAndCheck(address, now);
    const overAll = this.#requests.countAndCheck(address, now);
    if (!overEnrol && !overAll) return undefined;
    const retryAfterSeconds = this.#limits.retryAfterSeconds;
    return { status: 429, retryAfterSeconds, body: throttledBody(retryAfterSeconds) };
  }
}
