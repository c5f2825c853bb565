/**
 * How long a held message waits before it is tried again, and when it is let go. The bound is
 * measured from the message's FIRST receive, so a message cannot stay held longer than the
 * bound however often it comes back.
 */
export type HoldPolicy = {
  /** Waits in seconds by receive count: the first hold waits the first, and so on; the last repeats. */
  readonly backoffSeconds: readonly number[];
  /** Past this many seconds since the first receive, a message the store still cannot take is lost. */
  readonly boundSeconds: number;
};

export const defaultHoldPolicy: HoldPolicy = { backoffSeconds: [5, 10, 20, 30], boundSeconds: 120 };

/** The two-minute bound unless the configuration shortens it (beds and the real-time test do). */
export function holdPolicyOf(config: { readonly holdBoundSeconds?: number | undefined }): HoldPolicy {
  return config.holdBoundSeconds
    ? { ...defaultHoldPolicy, boundSeconds: config.holdBoundSeconds }
    : defaultHoldPolicy;
}

export type HoldDecision =
  | { readonly kind: 'hold'; readonly visibilitySeconds: number; readonly heldSeconds: number }
  | { readonly kind: 'lost'; readonly heldSeconds: number };

export function decideHold(
  policy: HoldPolicy,
  receiveCount: number,
  firstReceivedAtMs: number,
  nowMs: number,
): HoldDecision {
  const heldSeconds = Math.max(0, Math.round((nowMs - firstReceivedAtMs) / 1000));
  const remaining = policy.boundSeconds - (nowMs - firstReceivedAtMs) / 1000;
  if (remaining <= 0) return { kind: 'lost', heldSeconds };
  const index = Math.min(Math.max(receiveCount, 1) - 1, policy.backoffSeconds.length - 1);
  const wait = policy.backoffSeconds[index] ?? 5;
  // Never wait far past the bound: the message comes back about when it is due to be let go.
  return { kind: 'hold', visibilitySeconds: Math.max(1, Math.min(wait, Math.ceil(remaining))), heldSeconds };
}
