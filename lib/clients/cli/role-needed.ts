import { roleNeeded } from '../../server/functions/roles.ts';
import type { RoleNeeded } from '../http/api-client.ts';

/**
 * The role a request's route needs, from the route table. lib/server/functions/table.ts is loaded only here,
 * on IAM's refusal: it brings every handler's module, which no other `mesh` command needs, and
 * `mesh-host`, which shares the API client, never loads it.
 */
export async function roleNeededFromTable(method: string, path: string): Promise<RoleNeeded | undefined> {
  const { routes } = await import('../../server/functions/table.ts');
  return roleNeeded(routes, method, path);
}
