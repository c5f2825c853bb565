/**
 * What the API's firewall (api-firewall.ts) answers and counts, in plain values: the local
 * runtime's stand-in (lib/local/firewall.ts) answers the same without loading the CDK.
 */
export const firewallWindowSeconds = 300;
export const firewallRetryAfterSeconds = 60;
/**
 * Requests per address in a window. Enrolment: a third of the token budget (5/s: 1,500 in five
 * minutes), so one stranger cannot hold it alone and 300 hosts behind one NAT address get in each
 * window. Every request: a third of the host budget (100/s).
 */
export const defaultFirewallLimits = { enrolPerAddress: 500, requestsPerAddress: 10_000 } as const;
/** The enrolment route, after the stage prefix and any base path; a trailing slash reaches it too. */
export const enrolPathPattern = '/enrol/?$';

export const throttledBody = (retryAfterSeconds: number) =>
  JSON.stringify({
    error: {
      code: 'THROTTLED',
      message: `too many requests from this address; try again in ${retryAfterSeconds} s`,
    },
  });
