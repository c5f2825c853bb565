import * as z from 'zod';

const declaredModules = z.looseObject({
  modules: z.array(z.looseObject({ name: z.string(), version: z.string().nullable() })),
});

/**
 * The modules of a fetched declaration, each with its version, as a report carries them: what
 * the summary counts applied and failed per module version by. Undefined for a body that names
 * none it can read: the report then goes without them.
 */
export function modulesOfDeclaration(body: string): Record<string, string | null> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const read = declaredModules.safeParse(parsed);
  if (!read.success) return undefined;
  return Object.fromEntries(read.data.modules.map((module) => [module.name, module.version]));
}
