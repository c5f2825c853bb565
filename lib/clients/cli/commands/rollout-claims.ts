import type { RolloutAnswer } from '../../../server/core/rollout/pages.ts';
import { type ApiClient, ApiProblemError } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';

/**
 * A rollout's claims as `mesh push|upgrade --waves` follows them (docs/decisions/rollouts-in-waves.md):
 * the driver claims its nodes before wave 1; a refusal found while claiming is reported as the
 * 409 `rollout_overlap` a start answered when it claimed inside its request.
 */

/** How often the claims are read again. */
const followMs = 1_000;

/** The claims' progress, read without nodes: a header and counts, whatever the rollout's size. */
export const headerOf = (api: ApiClient, id: string) =>
  api.call<RolloutAnswer>('GET', `/rollouts/${id}?limit=1`);

/**
 * Reads the rollout until its nodes are claimed, saying how far the claims came; a refusal is
 * the 409 a start answered when it claimed inside its request, so its exit and `--json` hold.
 */
export async function untilClaimed(api: ApiClient, output: Output, id: string): Promise<RolloutAnswer> {
  let said = -1;
  for (;;) {
    const record = await headerOf(api, id);
    refuseIfRefused(record);
    said = sayClaims(output, record, said);
    // its answer is its first page, as the start's was when it claimed inside its request
    if (record.state !== 'claiming') return api.call<RolloutAnswer>('GET', `/rollouts/${id}`);
    await new Promise((resolve) => setTimeout(resolve, followMs));
  }
}

/** The claims' line when their count moved (the last one too, however quick the claiming was); the count said. */
export function sayClaims(output: Output, record: RolloutAnswer, said: number): number {
  if (!record.claims) return said;
  const { claimed } = record.claims;
  if (claimed !== said)
    output.say(cliLines.rolloutClaiming, { rollout: record.id, claimed, total: record.claims?.total ?? 0 });
  return claimed;
}

const noHeaders = { get: () => null };

export function refuseIfRefused(record: RolloutAnswer): void {
  if (record.state !== 'refused') return;
  throw new ApiProblemError(
    409,
    record.refusal?.code ?? 'rollout_overlap',
    record.reason ?? 'refused',
    noHeaders,
  );
}
