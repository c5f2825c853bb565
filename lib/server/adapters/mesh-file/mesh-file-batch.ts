import { auditItemsMax } from '../audit/audit-trail.ts';
import { type Item, type TransactItem, transactionLimit } from '../dynamodb/requests.ts';

/** An apply job's ledger item, in each of its transactions (apply-jobs.ts). */
export const ledgerItemsMax = 1;

/** A transaction's room for facts: the rest is its audit record's (audit-trail.ts) and its job's ledger item. */
const factLimit = transactionLimit - auditItemsMax - ledgerItemsMax;

/**
 * One transaction of an apply, built fact by fact: each fact brings the items today's single
 * writes (`node add`, `assign`, `consume`) make, with their conditions, and a transaction touches
 * an item once, so the facts' writes to one item are merged here: counts on a node or a provider
 * added up (its limit held for the sum), a presence check folded into an update of the same
 * item, marks written once.
 */
export type Op =
  | { readonly op: 'put'; readonly item: Item; readonly condition?: string }
  | { readonly op: 'check'; readonly condition: string; readonly values?: Record<string, unknown> }
  /** ADD to counts on a node item, each held to its limit: `count + n <= max`. */
  | { readonly op: 'count'; readonly counts: Record<string, number>; readonly limits: Record<string, number> }
  /** ADD consumedBy on a provider's assignment, which must be a provider. */
  | { readonly op: 'consumedBy'; readonly n: number }
  /** An item written as it is (a mark, a label update): the same write twice is one. */
  | { readonly op: 'raw'; readonly write: TransactItem };

export type Keyed = { readonly key: { pk: string; sk: string }; readonly op: Op };

export const keyText = (key: { pk: string; sk: string }) => `${key.pk}\u0000${key.sk}`;

export const nodeExists = 'attribute_exists(pk)';
export const moduleIsProvider = 'attribute_exists(pk) AND attribute_exists(provides)';

function merge(a: Op, b: Op): Op {
  if (a.op === 'count' && b.op === 'count') {
    const counts = { ...a.counts };
    for (const [name, n] of Object.entries(b.counts)) counts[name] = (counts[name] ?? 0) + n;
    return { op: 'count', counts, limits: { ...a.limits, ...b.limits } };
  }
  if (a.op === 'consumedBy' && b.op === 'consumedBy') return { op: 'consumedBy', n: a.n + b.n };
  // A provider's update holds only if its assignment exists: it answers a presence check too.
  if (a.op === 'consumedBy' && b.op === 'check') return a;
  if (a.op === 'check' && b.op === 'consumedBy') return b;
  if (a.op === 'put' && b.op === 'check') return a;
  if (a.op === 'check' && b.op === 'check' && a.condition === b.condition) return a;
  if (a.op === 'raw' && b.op === 'raw') return a;
  throw new Error(`two writes of one item in one transaction: ${a.op} and ${b.op}`);
}

export class Batch {
  readonly #ops = new Map<string, Keyed>();
  /** The nodes whose facts it holds: what an apply's progress names. */
  readonly nodes = new Set<string>();

  get size(): number {
    return this.#ops.size;
  }

  /** Whether a fact's writes fit beside what the transaction holds. */
  fits(fact: readonly Keyed[]): boolean {
    const fresh = new Set(fact.map(({ key }) => keyText(key)).filter((k) => !this.#ops.has(k)));
    return this.#ops.size + fresh.size <= factLimit;
  }

  /** The items it touches, each once (`pk`, NUL, `sk`). */
  keys(): string[] {
    return [...this.#ops.keys()];
  }

  add(fact: readonly Keyed[], node?: string): void {
    if (node !== undefined) this.nodes.add(node);
    for (const { key, op } of fact) {
      const k = keyText(key);
      const found = this.#ops.get(k);
      this.#ops.set(k, { key, op: found ? merge(found.op, op) : op });
    }
  }

  /** The transaction's items, each with the op it came from (to name a failed condition). */
  items(tableName: string): Array<{ readonly write: TransactItem; readonly keyed: Keyed }> {
    return [...this.#ops.values()].map((keyed) => ({ write: writeOf(tableName, keyed), keyed }));
  }
}

/** `(attribute_not_exists(c) OR c <= :max)`: the count stays at or under its limit after adding n. */
const within = (count: string, placeholder: string) =>
  `(attribute_not_exists(${count}) OR ${count} <= ${placeholder})`;

function writeOf(TableName: string, { key, op }: Keyed): TransactItem {
  switch (op.op) {
    case 'put':
      return {
        Put: { TableName, Item: op.item, ...(op.condition ? { ConditionExpression: op.condition } : {}) },
      };
    case 'check':
      return {
        ConditionCheck: {
          TableName,
          Key: key,
          ConditionExpression: op.condition,
          ...(op.values ? { ExpressionAttributeValues: op.values } : {}),
        },
      };
    case 'count': {
      const names = Object.keys(op.counts);
      const values: Record<string, unknown> = {};
      const conditions = [nodeExists];
      for (const name of names) {
        values[`:${name}`] = op.counts[name];
        values[`:${name}Max`] = (op.limits[name] ?? 0) - (op.counts[name] ?? 0);
        conditions.push(within(name, `:${name}Max`));
      }
      return {
        Update: {
          TableName,
          Key: key,
          UpdateExpression: `ADD ${names.map((name) => `${name} :${name}`).join(', ')}`,
          ConditionExpression: conditions.join(' AND '),
          ExpressionAttributeValues: values,
        },
      };
    }
    case 'consumedBy':
      return {
        Update: {
          TableName,
          Key: key,
          UpdateExpression: 'ADD consumedBy :n',
          ConditionExpression: moduleIsProvider,
          ExpressionAttributeValues: { ':n': op.n },
        },
      };
    case 'raw':
      return op.write;
  }
}
