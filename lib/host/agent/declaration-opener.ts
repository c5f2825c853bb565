import type { CryptoKey } from 'jose';
import * as z from 'zod';
import { SealedSecretRefusedError } from '../../core/sealing/errors.ts';
import { openSealed, relationOf } from '../../core/sealing/sealed-secret.ts';
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

  /** `sealingKey` is asked at each open: after a key rotation it answers the new key. */
  constructor(node: string, sealingKey: () => CryptoKey) {
    this.#node = node;
    this.#sealingKey = sealingKey;
  }

  async open(body: string): Promise<OpenedDeclaration> {
    const parsed = sealedParts.safeParse(parseJson(body));
    if (!parsed.success) return { ok: false, reason: 'the declaration is not one this agent can read' };
    const { provisions, grants } = parsed.data;
    if (![...provisions, ...grants].some((entry) => entry.sealed !== undefined)) return { ok: true, body };
    const key = this.#sealingKey();
    const node = this.#node;
    try {
      const opened = {
        ...parsed.data,
        provisions: await Promise.all(
          provisions.map(async ({ sealed, ...provision }) =>
            sealed === undefined
              ? provision
              : {
                  ...provision,
                  secret: await openSealed(sealed, key, {
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
                  secret: await openSealed(sealed, key, {
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
