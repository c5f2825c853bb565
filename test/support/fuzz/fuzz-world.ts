import { generateNodeKeys, type NodeKeys } from '../../../lib/clients/host/keys.ts';
import { tokenString } from '../../../lib/server/core/enrolment/token.ts';
import { moduleVersion, nodeName } from '../../../lib/server/core/names.ts';
import { pushId } from '../../../lib/server/core/push/records.ts';
import type { FuzzWorld } from './fuzz-cases.ts';
import { jsonSchemaOf } from './schema-values.ts';

/** Nodes and modules of the mesh the fuzz starts from; the valid requests name them most of the time. */
const nodes = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
const modules = ['web', 'db', 'cache', 'queue'];
/** The seeded mesh's modules, and the versions valid requests name (builds, upgrades, retractions). */
export const fuzzModules: readonly string[] = modules;
export const fuzzVersions = ['1.0.0', '2.0.0'];
/** Enrolled nodes whose keys sign the host requests; operator requests leave them alone. */
export const fuzzHosts = ['fuzz-a', 'fuzz-b'];

export type SeededWorld = FuzzWorld & { readonly keys: Map<string, NodeKeys> };

const relation = (node: string, module: string, providerNode: string, providerModule: string) => ({
  params: { node, module, providerNode, providerModule },
});
const consume = (node: string, module: string, provider: { node: string; module: string }) => ({
  params: { node, module },
  body: { provider },
});

/**
 * Requests that name things of the seeded mesh together (a consumer and a provider that exist,
 * on two nodes or on one), which names drawn one by one from the pools seldom do.
 */
const examples: FuzzWorld['examples'] = {
  'mesh-assign': [
    { params: { node: 'delta', module: 'web' }, body: {} },
    { params: { node: 'epsilon', module: 'db' }, body: { provides: 'mysql' } },
  ],
  'mesh-consume': [
    consume('alpha', 'web', { node: 'gamma', module: 'cache' }),
    consume('gamma', 'queue', { node: 'gamma', module: 'cache' }),
    consume('alpha', 'web', { node: 'beta', module: 'db' }),
  ],
  'mesh-unconsume': [relation('alpha', 'web', 'beta', 'db'), relation('alpha', 'web', 'gamma', 'cache')],
  'mesh-rotate': [{ ...relation('alpha', 'web', 'beta', 'db'), body: {} }],
  'mesh-unassign': [
    { params: { node: 'gamma', module: 'queue' } },
    { params: { node: 'delta', module: 'web' } },
  ],
  'mesh-node-remove': [{ params: { node: 'epsilon' } }],
  'mesh-push': [
    { body: { node: 'alpha' } },
    { body: { behind: true } },
    { body: { behind: true, full: true } },
  ],
  'mesh-push-plan': [{ body: { node: 'alpha' } }, { body: { behind: true, full: true } }],
  'control-upgrade': [{ body: { module: 'web', version: '2.0.0' } }],
};

/**
 * Builds a small mesh through the API (nodes, modules, a relation, a push, two enrolled hosts,
 * live tokens) and answers what the valid requests are drawn from: its names, its tokens, its
 * push ids, and the hosts' keys.
 */
export async function seedWorld(api: string): Promise<SeededWorld> {
  const call = caller(api, []);
  await buildShape(call, [...nodes, ...fuzzHosts]);
  await call('POST', '/push', { behind: true });
  const keys = new Map<string, NodeKeys>();
  for (const node of fuzzHosts) {
    const { token } = (await call('POST', `/nodes/${node}/token`, {})) as { token: string };
    const { keys: generated } = await generateNodeKeys();
    await call('POST', '/enrol', {
      node,
      token,
      keys: { signing: generated.signing.publicJwk, sealing: generated.sealing.publicJwk },
    });
    keys.set(node, generated);
  }
  const tokens: string[] = [];
  for (const node of ['delta', 'epsilon'])
    tokens.push(((await call('POST', `/nodes/${node}/token`, {})) as { token: string }).token);
  const { pushes } = (await call('GET', '/pushes')) as { pushes: Array<{ id: string }> };
  const pattern = (schema: Parameters<typeof jsonSchemaOf>[0]) => jsonSchemaOf(schema).pattern as string;
  return {
    hosts: fuzzHosts,
    keys,
    examples,
    pools: new Map([
      ['field:node', nodes],
      ['field:providerNode', nodes],
      ['field:module', modules],
      ['field:providerModule', modules],
      [pattern(nodeName), [...nodes, ...modules]],
      [pattern(tokenString), tokens],
      [pattern(moduleVersion), fuzzVersions],
      [pattern(pushId), pushes.map((push) => push.id)],
    ]),
  };
}

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

/** Calls the API as an operator; an answer of `tolerated` counts as done, any other >= 300 throws. */
const caller =
  (api: string, tolerated: number[]): Call =>
  async (method, path, body) => {
    const answer = await fetch(`${api}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await answer.text();
    if (tolerated.includes(answer.status)) return {};
    if (answer.status >= 300)
      throw new Error(`fuzz seed: ${method} ${path} answered ${answer.status}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

/** The seeded mesh's nodes, modules and relation. */
async function buildShape(call: Call, names: readonly string[]) {
  for (const node of names) await call('POST', '/nodes', { node });
  await call('PUT', '/nodes/alpha/modules/web', {});
  await call('PUT', '/nodes/beta/modules/db', { provides: 'postgres' });
  await call('PUT', '/nodes/gamma/modules/cache', { provides: 'redis' });
  await call('PUT', '/nodes/gamma/modules/queue', {});
  await call('POST', '/nodes/alpha/modules/web/consumes', { provider: { node: 'beta', module: 'db' } });
}

/**
 * Puts back what the valid removals of the cases took away (nodes, modules, the relation), so
 * later valid consumes, rotations and removals still find what they name; what is there stays.
 */
export async function restoreWorld(api: string): Promise<void> {
  await buildShape(caller(api, [409]), nodes);
}
