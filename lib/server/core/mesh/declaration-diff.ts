import type { Declaration } from './declaration.ts';

/** One difference between what a node was last sent and what it would be sent; never a secret. */
export type DeclarationChange = {
  readonly section: 'module' | 'provision' | 'grant';
  readonly change: 'added' | 'removed' | 'changed';
  /** `web`, `web -> broker/rabbitmq (amqp)`, `rabbitmq <- app/web (amqp)`. */
  readonly item: string;
  /** What changed in it: `version 1.0 -> 2.0`, `secret changed`, `secret new`. */
  readonly detail?: string;
};

type Entry = {
  readonly item: string;
  readonly shown: Record<string, string | null>;
  /** The mint the secret came from: a new generation is a new secret, told without the secret. */
  readonly secret?: string;
};

/**
 * What differs between two declarations, item by item, in a form to read: modules by name,
 * provisions by consumer module and provider, grants by provider module and consumer. A
 * secret is only ever said to be new, changed or unchanged.
 */
export function diffDeclarations(before: Declaration | undefined, after: Declaration): DeclarationChange[] {
  return [
    ...diffSection(
      'module',
      entries(before?.modules ?? [], moduleEntry),
      entries(after.modules, moduleEntry),
    ),
    ...diffSection(
      'provision',
      entries(before?.provisions ?? [], provisionEntry),
      entries(after.provisions, provisionEntry),
    ),
    ...diffSection('grant', entries(before?.grants ?? [], grantEntry), entries(after.grants, grantEntry)),
  ];
}

const moduleEntry = (m: Declaration['modules'][number]): Entry => ({
  item: m.name,
  shown: { version: m.version, provides: m.provides },
});

const provisionEntry = (p: Declaration['provisions'][number]): Entry => ({
  item: `${p.module} -> ${p.provider.node}/${p.provider.module} (${p.provider.kind})`,
  shown: { resource: p.resource, user: p.user },
  secret: p.generation,
});

const grantEntry = (g: Declaration['grants'][number]): Entry => ({
  item: `${g.module} <- ${g.consumer.node}/${g.consumer.module} (${g.kind})`,
  shown: { resource: g.resource, user: g.user },
  secret: g.generation,
});

function entries<T>(items: readonly T[], entry: (item: T) => Entry): Map<string, Entry> {
  return new Map(items.map((item) => [entry(item).item, entry(item)]));
}

function diffSection(
  section: DeclarationChange['section'],
  before: Map<string, Entry>,
  after: Map<string, Entry>,
): DeclarationChange[] {
  const changes: DeclarationChange[] = [];
  for (const [item, now] of after) {
    const was = before.get(item);
    if (!was) {
      const shown = described(now.shown);
      const secret = now.secret !== undefined ? 'secret new' : '';
      const detail = [shown, secret].filter(Boolean).join(', ');
      changes.push({ section, change: 'added', item, ...(detail ? { detail } : {}) });
      continue;
    }
    const differences = Object.keys(now.shown)
      .filter((name) => now.shown[name] !== was.shown[name])
      .map((name) => `${name} ${was.shown[name] ?? '-'} -> ${now.shown[name] ?? '-'}`);
    if (now.secret !== was.secret) differences.push('secret changed');
    if (differences.length > 0)
      changes.push({ section, change: 'changed', item, detail: differences.join(', ') });
  }
  for (const item of before.keys()) if (!after.has(item)) changes.push({ section, change: 'removed', item });
  return changes;
}

function described(shown: Record<string, string | null>): string {
  return Object.entries(shown)
    .filter(([, value]) => value !== null)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
}
