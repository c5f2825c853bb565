import { canonicalJson, compareText as compare, digestOf } from '../canonical.ts';
import type { HeldBack } from '../hold/held-back.ts';
import type { Composed, Declaration } from '../mesh/declaration.ts';
import { provisionKey } from '../mesh/model.ts';

/**
 * What a node not itself held back is sent while a node it is related to is (docs/decisions/held-back.md):
 * a relation never changes on one side before the other side can be sent it.
 *
 * - As consumer: a provision new or changed since the node was last sent, whose provider is held
 *   back, waits with it. The node keeps the provision it was last sent (or, for a new one, the
 *   relation is listed as waiting, `heldBack` naming who holds it), and nothing is minted for it,
 *   so nothing is written to the held provider's side.
 * - As provider: a grant it was last sent, for a consumer held back that still holds the
 *   provision, is kept as it was sent (dropped or changed only once the consumer is sent).
 *
 * Every other change goes out. A provider is never held up by its consumers and a consumer by
 * no one but a held-back provider, so a node that is not held back can always be sent in the
 * push's rounds: waiting never chains. The node stays marked while anything waits, so the first
 * push after the hold lifts sends it whole.
 */
export type WithHolds = {
  readonly composed: Composed;
  /** The relations that wait, each naming the held-back node it waits for and who holds it. */
  readonly waits: readonly HeldBack[];
};

type Provision = Declaration['provisions'][number];
type Grant = Declaration['grants'][number];
type Waiting = Declaration['waiting'][number];

const grantKeyOf = (g: Grant) => `${g.module}<${g.consumer.node}/${g.consumer.module}`;
const provisionKeyOf = (p: Pick<Provision, 'module' | 'provider'>) =>
  provisionKey({
    consumerModule: p.module,
    providerNode: p.provider.node,
    providerModule: p.provider.module,
  });

/** The nodes whose holds decide what `composed` may carry: providers of changed provisions, consumers of changed grants. */
export function heldRelationCounterparts(
  node: string,
  composed: Composed,
  before: Partial<Declaration> | undefined,
): string[] {
  const had = new Map((before?.provisions ?? []).map((p) => [provisionKeyOf(p), p.generation]));
  const keeps = new Map(composed.declaration.grants.map((g) => [grantKeyOf(g), g.generation]));
  return [
    ...new Set([
      ...composed.declaration.provisions
        .filter((p) => p.provider.node !== node && had.get(provisionKeyOf(p)) !== p.generation)
        .map((p) => p.provider.node),
      ...(before?.grants ?? [])
        .filter((g) => g.consumer.node !== node && keeps.get(grantKeyOf(g)) !== g.generation)
        .map((g) => g.consumer.node),
    ]),
  ].sort();
}

/** The declaration as it may be sent now, given who holds the counterparts (`holderOf`: undefined when not held). */
export function withHolds(
  node: string,
  composed: Composed,
  before: Partial<Declaration> | undefined,
  holderOf: (node: string) => string | undefined,
): WithHolds {
  const { declaration } = composed;
  const waits: HeldBack[] = [];
  const lastProvisions = new Map((before?.provisions ?? []).map((p) => [provisionKeyOf(p), p]));
  const provisions: Provision[] = [];
  const waiting: Waiting[] = [...declaration.waiting];
  const waitingMints = new Set<string>();
  for (const p of declaration.provisions) {
    const last = lastProvisions.get(provisionKeyOf(p));
    const by =
      p.provider.node === node || last?.generation === p.generation ? undefined : holderOf(p.provider.node);
    if (by === undefined) {
      provisions.push(p);
      continue;
    }
    waits.push({ node, by, waitsFor: p.provider.node });
    waitingMints.add(provisionKeyOf(p));
    if (last) provisions.push(last);
    else
      waiting.push({ module: p.module, provider: p.provider, waitingFor: [p.provider.node], heldBack: by });
  }
  const grants = new Map(declaration.grants.map((g) => [grantKeyOf(g), g]));
  for (const g of before?.grants ?? []) {
    if (g.consumer.node === node || grants.get(grantKeyOf(g))?.generation === g.generation) continue;
    const by = holderOf(g.consumer.node);
    if (by === undefined) continue;
    waits.push({ node, by, waitsFor: g.consumer.node });
    grants.set(grantKeyOf(g), g);
  }
  if (waits.length === 0) return { composed, waits };
  const held: Declaration = {
    ...declaration,
    provisions: provisions.sort((a, b) => compare(provisionKeyOf(a), provisionKeyOf(b))),
    grants: [...grants.values()].sort((a, b) => compare(grantKeyOf(a), grantKeyOf(b))),
    waiting: waiting.sort((a, b) => compare(provisionKeyOf(a), provisionKeyOf(b))),
  };
  const canonical = canonicalJson(held);
  return {
    composed: {
      ...composed,
      declaration: held,
      canonical,
      digest: digestOf(canonical),
      mints: composed.mints.filter((mint) => !waitingMints.has(provisionKey(mint))),
    },
    waits,
  };
}
