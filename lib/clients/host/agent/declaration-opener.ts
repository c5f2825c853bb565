import type { CryptoKey } from 'jose';
import * as z from 'zod';
import { SealedSecretRefusedError } from '../../../server/core/sealing/errors.ts';
import { openSealed, relationOf, type SealBinding } from '../../../server/core/sealing/sealed-secret.ts';
import type { DeclarationOpener, OpenedDeclaration } from './ports.ts';

/**
 * Opens the sealed copies in a fetched declaration with the node's sealing key
 * (docs/decisions/sealed-secrets.md), so the hook is handed today's shape: `secret` in clear in
 * each provision and grant (docs/hook-writers.md). Each copy is opened where it was found: a
 * provision as this node the consumer of its provider, a grant as this node the provider of its
 * consumer. One copy that does not open refuses the whole declaration, naming it, and the hook is
 * not run. A provision or grant with no sealed copy is handed on as it came.
 */
export class SealedDeclarationOpener implements DeclarationOpener {
  readonly #node: string;
  readonly #sealingKey: () => CryptoKey;
  /**
   * The secrets the last declaration opened, by binding and sealed copy, with the key that opened
   * them: a change that leaves a relation alone opens nothing again (opening is about 1 ms a copy
   * on the packaged agent, 200 ms a change for a node of 200). It holds no more than the last
   * declaration's, which the hook's file holds as well; a new key empties it.
   */
  #opened: { readonly key: CryptoKey; readonly secrets: ReadonlyMap<string, string> } | undefined;

  readonly #openSealed: typeof openSealed;

  /**
   * `sealingKey` is asked at each open: after a key rotation it answers the new key. `open` is
   * the opening of one copy; a test counts the copies opened through it.
   */
  constructor(node: string, sealingKey: () => CryptoKey, open: typeof openSealed = openSealed) {
    this.#node = node;
    this.#sealingKey = sealingKey;
    this.#openSealed = open;
  }

  async open(body: string): Promise<OpenedDeclaration> {
    const parsed = sealedParts.safeParse(parseJson(body));
    if (!parsed.success) return { ok: false, reason: 'the declaration is not one this agent can read' };
    const { provisions, grants } = parsed.data;
    if (![...provisions, ...grants].some((entry) => entry.sealed !== undefined)) return { ok: true, body };
    const key = this.#sealingKey();
    const node = this.#node;
    const before = this.#opened?.key === key ? this.#opened.secrets : new Map<string, string>();
    const secrets = new Map<string, string>();
    const openOne = async (sealed: string, binding: SealBinding) => {
      const known = `${binding.side}\n${binding.relation}\n${binding.generation}\n${sealed}`;
      const secret = before.get(known) ?? (await this.#openSealed(sealed, key, binding));
      secrets.set(known, secret);
      return secret;
    };
    try {
      const opened = {
        ...parsed.data,
        provisions: await Promise.all(
          provisions.map(async ({ sealed, ...provision }) =>
            sealed === undefined
              ? provision
              : {
                  ...provision,
                  secret: await openOne(sealed, {
                    node,
                    side: 'consumer',
                    generation: provision.generation ?? '',
                    relation: relationOf({
                      consumerNode: node,
                      consumerModule: provision.module,
                      providerNode: provision.provider.node,
                      providerModule: provision.provider.module,
                    }),
                  }),
                },
          ),
        ),
        grants: await Promise.all(
          grants.map(async ({ sealed, ...grant }) =>
            sealed === undefined
              ? grant
              : {
                  ...grant,
                  secret: await openOne(sealed, {
                    node,
                    side: 'provider',
                    generation: grant.generation ?? '',
                    relation: relationOf({
                      consumerNode: grant.consumer.node,
                      consumerModule: grant.consumer.module,
                      providerNode: node,
                      providerModule: grant.module,
                    }),
                  }),
                },
          ),
        ),
      };
      this.#opened = { key, secrets };
      return { ok: true, body: JSON.stringify(opened) };
    } catch (error) {
      if (error instanceof SealedSecretRefusedError) return { ok: false, reason: error.message };
      throw error;
    }
  }
}

const sealedCopy = { sealed: z.string().optional(), generation: z.string().optional() };

/** Only what opening needs is checked; every other member is handed on as it came. */
const sealedParts = z.looseObject({
  provisions: z.array(
    z.looseObject({
      module: z.string(),
      provider: z.looseObject({ node: z.string(), module: z.string() }),
      ...sealedCopy,
    }),
  ),
  grants: z.array(
    z.looseObject({
      module: z.string(),
      consumer: z.looseObject({ node: z.string(), module: z.string() }),
      ...sealedCopy,
    }),
  ),
});

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
