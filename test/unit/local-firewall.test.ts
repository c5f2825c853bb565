import { describe, expect, it } from 'vitest';
import { deployedFirewallLimits, LocalFirewall, localFirewallLimits } from '../../lib/local/firewall.ts';

const limits = { enrolPerAddress: 3, requestsPerAddress: 5, windowSeconds: 10, retryAfterSeconds: 10 };

describe("the local runtime's stand-in for the API's firewall", () => {
  it('answers 429 with Retry-After past the enrolment limit of one address, the refused requests counted too', () => {
    const firewall = new LocalFirewall(limits);
    const answers = [0, 1, 2, 3, 4].map((ms) => firewall.admit('10.0.0.1', '/enrol', ms)?.status);
    expect(answers).toEqual([undefined, undefined, undefined, 429, 429]);
    expect(firewall.admit('10.0.0.1', '/enrol', 5)).toMatchObject({
      retryAfterSeconds: 10,
      body: expect.stringContaining('"THROTTLED"'),
    });
    // another address has its own count; the window slides past the first requests
    expect(firewall.admit('10.0.0.2', '/enrol', 6)).toBeUndefined();
    expect(firewall.admit('10.0.0.1', '/enrol', 10_004)).toBe(undefined);
  });

  it('counts every route against the request limit, and only …/enrol against the enrolment one', () => {
    const firewall = new LocalFirewall(limits);
    const answers = [0, 1, 2, 3, 4, 5].map(
      (ms) => firewall.admit('10.0.0.1', '/hosts/web-1/declaration', ms)?.status,
    );
    expect(answers).toEqual([undefined, undefined, undefined, undefined, undefined, 429]);
  });

  it('is read from MESH_LOCAL_FIREWALL: on, off, or limits with a shorter window', () => {
    expect(localFirewallLimits(undefined)).toBeUndefined();
    expect(localFirewallLimits('off')).toBeUndefined();
    expect(localFirewallLimits('on')).toEqual(deployedFirewallLimits);
    expect(localFirewallLimits('enrol=40,window=2')).toEqual({
      ...deployedFirewallLimits,
      enrolPerAddress: 40,
      windowSeconds: 2,
      retryAfterSeconds: 2,
    });
    expect(localFirewallLimits('enrol=lots')).toBe(
      'MESH_LOCAL_FIREWALL: "enrol=lots" is not enrol=N, requests=N or window=SECONDS',
    );
  });
});
