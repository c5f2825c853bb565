/** What a request changed in the tables: the keys of items added, removed and changed. */
export type StoreChange = {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
  /** All of them together. */
  readonly items: number;
};

type Contents = Record<string, unknown[]>;

export const itemKey = (table: string, pk: string, sk: string) => `${table} ${pk} ${sk}`;

/** Compares two readings of `tableContents`, item by item, keyed by `itemKey`. */
export function storeChange(before: Contents, after: Contents): StoreChange {
  const keyed = (contents: Contents) => {
    const items = new Map<string, string>();
    for (const [table, rows] of Object.entries(contents))
      for (const row of rows as Array<{ pk?: unknown; sk?: unknown }>)
        items.set(itemKey(table, String(row.pk), String(row.sk)), JSON.stringify(row));
    return items;
  };
  const was = keyed(before);
  const now = keyed(after);
  const added = [...now.keys()].filter((key) => !was.has(key));
  const removed = [...was.keys()].filter((key) => !now.has(key));
  const changed = [...now.keys()].filter((key) => was.has(key) && was.get(key) !== now.get(key));
  return { added, removed, changed, items: added.length + removed.length + changed.length };
}
