import type { NodeHealth, NodeRevert } from '../../server/core/views/ports.ts';

/**
 * A node's health as `mesh status`, `mesh node list` and `mesh node show` say it: `healthy`,
 * `UNHEALTHY: <reason>`, `checking` (a check whose verdict on the applied revision is still to
 * come), `no check`; nothing for a host that never reported one.
 */
export function healthText(health: NodeHealth | undefined, withReason = true): string | undefined {
  if (!health) return undefined;
  switch (health.state) {
    case 'healthy':
      return 'healthy';
    case 'unhealthy':
      return withReason && health.reason ? `UNHEALTHY: ${health.reason}` : 'UNHEALTHY';
    case 'unknown':
      return health.check ? 'checking' : 'no check';
  }
}

/** `reverted 5 -> 4 (unhealthy)`, or `revert of 5 to 4 FAILED (failed)`. */
export function revertText(revert: NodeRevert | undefined): string | undefined {
  if (!revert) return undefined;
  return revert.ok
    ? `reverted ${revert.from} -> ${revert.to} (${revert.cause})`
    : `revert of ${revert.from} to ${revert.to} FAILED (${revert.cause})`;
}
