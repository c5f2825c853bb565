import { type SignalChannel, signalChannel, signalHeader } from '../../../server/core/signal/channel.ts';
import { type ApiAnswer, type ApiClient, ApiUnreachableError, problemError } from '../../http/api-client.ts';
import {
  ControlPlaneUnavailableError,
  CredentialRefusedError,
  HostAgentError,
  SequenceAheadRefusedError,
} from './errors.ts';
import type { ControlPlane, FetchedDeclaration, HostReport } from './ports.ts';

/** Sends one signed request and gives back what came of it: the node's ApiClient (hostApiClient) does. */
export type HostRequests = Pick<ApiClient, 'send'>;

/** The control plane over HTTPS, every request signed by the node's key. */
export class HttpControlPlane implements ControlPlane {
  private readonly api: HostRequests;
  private readonly node: string;

  constructor(api: HostRequests, node: string) {
    this.api = api;
    this.node = node;
  }

  async fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration> {
    const answer = await this.ask(() =>
      this.api.send(
        'GET',
        `/hosts/${this.node}/declaration`,
        undefined,
        etag ? { 'if-none-match': etag } : {},
      ),
    );
    const signal = { signal: channelOf(answer) };
    if (answer.status === 304) return { status: 'unchanged', ...signal };
    if (answer.status === 404 && errorCode(answer) === 'not_sent') return { status: 'not-sent', ...signal };
    refuse(answer);
    const sent = answer.body as { revision?: unknown; declaration?: unknown } | undefined;
    const tag = answer.headers.get('etag');
    if (!tag || typeof sent?.revision !== 'number' || typeof sent.declaration !== 'object') {
      throw new HostAgentError('the declaration came back without an ETag, a revision or a declaration');
    }
    return {
      status: 'changed',
      etag: tag,
      revision: sent.revision,
      body: `${JSON.stringify(sent.declaration, null, 2)}\n`,
      ...signal,
    };
  }

  async sendReport(report: HostReport): Promise<void> {
    const answer = await this.ask(() => this.api.send('POST', `/hosts/${this.node}/reports`, report));
    refuse(answer);
  }

  private async ask(call: () => Promise<ApiAnswer>): Promise<ApiAnswer> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ApiUnreachableError)
        throw new ControlPlaneUnavailableError(error.message, undefined, { cause: error });
      throw error;
    }
  }
}

/** Where the node's signal is, as the `Mesh-Signal` header names it; undefined when absent or unreadable. */
function channelOf(answer: ApiAnswer): SignalChannel | undefined {
  const value = answer.headers.get(signalHeader);
  if (!value) return undefined;
  try {
    const parsed = signalChannel.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function errorCode(answer: ApiAnswer): string | undefined {
  return (answer.body as { error?: { code?: string } } | undefined)?.error?.code;
}

function refuse(answer: ApiAnswer): void {
  if (answer.status < 400) return;
  const problem = problemError(answer);
  if (answer.status === 401 || answer.status === 403)
    throw new CredentialRefusedError(problem.code, problem.message);
  if (answer.status === 429 || answer.status >= 500) {
    const retryAfter = Number(answer.headers.get('retry-after'));
    throw new ControlPlaneUnavailableError(
      `the control plane said try again (${answer.status} ${problem.code})`,
      Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
    );
  }
  const refused = `the control plane refused: ${problem.status} ${problem.code}: ${problem.message}`;
  const latestAccepted = (answer.body as { error?: { details?: { latestAccepted?: unknown } } } | undefined)
    ?.error?.details?.latestAccepted;
  if (problem.code === 'sequence_ahead' && typeof latestAccepted === 'number')
    throw new SequenceAheadRefusedError(refused, latestAccepted);
  throw new HostAgentError(refused);
}
