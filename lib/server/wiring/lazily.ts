/**
 * An object whose every property is made by its maker on first read, then kept. Each stays
 * configurable, so a bed's own entry can put one part in another's place before any is read.
 */
export function lazily<T extends object>(makers: { readonly [K in keyof T]: () => T[K] }): T {
  const made = new Map<PropertyKey, unknown>();
  const object = {} as T;
  for (const key of Object.keys(makers) as Array<keyof T>) {
    Object.defineProperty(object, key, {
      enumerable: true,
      configurable: true,
      get: () => {
        if (!made.has(key)) made.set(key, makers[key]());
        return made.get(key);
      },
    });
  }
  return object;
}
