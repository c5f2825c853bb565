import { type ApiAnswer, ApiClient } from '../../lib/cli/api-client.ts';
import { createSigV4Signer } from '../../lib/cli/sigv4.ts';
import type { SignalChannel } from '../../lib/core/signal/channel.ts';
import { possessionProof } from '../../lib/host/key-rotation.ts';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/host/keys.ts';
import { connectPassword, hostRequestSigner } from '../../lib/host/proof.ts';
import type { Denial, RehearsalLedger } from './ledger.ts';
import { rehearsalOperator } from './operator-signature.ts';
import { denialLine } from './report.ts';

/** One step of the drive: what it showed, how long it took, and what went wrong if it failed. */
export type DriveStep = {
  readonly name: string;
  readonly ok: boolean;
  readonly ms: number;
  readonly detail?: string;
};

export class DriveFailure extends Error {
  override name = 'DriveFailure';
}

export function expectStatus(answer: ApiAnswer, status: number, what: string): ApiAnswer {
  if (answer.status !== status)
    throw new DriveFailure(
      `${what}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`,
    );
  return answer;
}

type Declaration = {
  revision: number;
  declaration: { modules: Array<{ name: string; version: string | null }> };
};

/**
 * How the drive talks to the rehearsed API: as the operator (SigV4 with the rehearsal's key),
 * as nobody, and as each enrolled host (its proof of possession), with the few reads the
 * steps wait on.
 */
export class DriveClients {
  readonly operator: ApiClient;
  readonly anonymous: ApiClient;
  readonly #url: string;
  readonly #ledger: RehearsalLedger;
  readonly #keys = new Map<string, NodeKeys>();
  readonly #channels = new Map<string, SignalChannel>();
  #sequence = Date.now();

  constructor(url: string, region: string, ledger: RehearsalLedger) {
    this.#url = url;
    this.#ledger = ledger;
    this.operator = new ApiClient(url, {
      signer: createSigV4Signer({ region, credentials: rehearsalOperator }),
    });
    this.anonymous = new ApiClient(url);
  }

  /**
   * The API as `node`'s host, signing as `as` with its keys (another node's, to be refused), or
   * with the `keys` given (a replaced key, to be refused).
   */
  host(node: string, as = node, keys = this.#keys.get(as)): ApiClient {
    if (!keys) throw new DriveFailure(`${as} has not enrolled`);
    return new ApiClient(this.#url, { signer: hostRequestSigner(signingKeyOf(as, keys)) });
  }

  /** Issues a token for `node` and enrols it with fresh keys, as `mesh-host enrol` does. */
  async enrol(node: string): Promise<void> {
    const issued = expectStatus(
      await this.operator.send('POST', `/nodes/${node}/token`, { ttl: '1h' }),
      201,
      `issue ${node}`,
    ).body as { token: string };
    const { keys } = await generateNodeKeys();
    this.#keys.set(node, keys);
    const body = {
      node,
      token: issued.token,
      keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
    };
    const enrolled = expectStatus(
      await this.anonymous.send('POST', '/enrol', body),
      200,
      `POST /enrol ${node}`,
    ).body as { signal: SignalChannel | null };
    if (enrolled.signal) this.#channels.set(node, enrolled.signal);
  }

  /** Where `node`'s host waits for its signal, as its enrolment answer said. */
  channelOf(node: string): SignalChannel {
    const channel = this.#channels.get(node);
    if (!channel) throw new DriveFailure(`the enrolment of ${node} named no signal channel`);
    return channel;
  }

  /** The MQTT password of a broker connect as `node`'s host, signed with the keys of `as` (another node's, to be refused). */
  connectPassword(node: string, as = node): Promise<string> {
    const keys = this.#keys.get(as);
    if (!keys) throw new DriveFailure(`${as} has not enrolled`);
    return connectPassword(signingKeyOf(node, keys));
  }

  /**
   * `node`'s host replaces its keys, as `mesh-host rotate` does; answers the keys it replaced,
   * which the caller can show refused.
   */
  async rotate(node: string): Promise<NodeKeys> {
    const old = this.#keys.get(node);
    if (!old) throw new DriveFailure(`${node} has not enrolled`);
    const { keys: next } = await generateNodeKeys();
    const body = {
      keys: { signing: next.signing.publicJwk, sealing: next.sealing.publicJwk },
      possession: await possessionProof(node, next, old.thumbprint),
    };
    const path = `/hosts/${node}/keys`;
    expectStatus(await this.host(node).send('POST', path, body), 200, `POST ${path}`);
    this.#keys.set(node, next);
    return old;
  }

  async declarationOf(node: string): Promise<Declaration> {
    const path = `/nodes/${node}/declaration`;
    return expectStatus(await this.operator.send('GET', path), 200, `GET ${path}`).body as Declaration;
  }

  async versionOf(node: string, module: string): Promise<string | null | undefined> {
    const { declaration } = await this.declarationOf(node);
    return declaration.modules.find((entry) => entry.name === module)?.version;
  }

  async appliedRevision(node: string): Promise<number | undefined> {
    return (await this.#statusOf(node))?.appliedRevision ?? undefined;
  }

  /** Whether `mesh status` shows `node` online (true), offline (false) or has heard nothing (null). */
  async online(node: string): Promise<boolean | null | undefined> {
    return (await this.#statusOf(node))?.online;
  }

  async #statusOf(node: string) {
    const { nodes } = expectStatus(await this.operator.send('GET', '/status'), 200, 'GET /status').body as {
      nodes: Array<{ node: string; appliedRevision: number | null; online: boolean | null }>;
    };
    return nodes.find((entry) => entry.node === node);
  }

  /** `node`'s host reports the revision applied. */
  async reportApplied(node: string, revision: number): Promise<void> {
    const body = { sequence: ++this.#sequence, state: 'applied', revision, sentAt: new Date().toISOString() };
    const path = `/hosts/${node}/reports`;
    expectStatus(await this.host(node).send('POST', path, body), 202, `POST ${path}`);
  }

  /** Waits for `check` to give a value; a denied call ends the wait at once, since what follows it would not come. */
  async waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    const deniedBefore = this.#ledger.denials.length;
    while (Date.now() < deadline) {
      const denial = this.#ledger.denials[deniedBefore] as Denial | undefined;
      if (denial)
        throw new DriveFailure(`stopped waiting for ${what}: a call was denied (${denialLine(denial)})`);
      const value = await check();
      if (value !== undefined) return value;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new DriveFailure(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
  }
}
