import type { ProblemBody } from '../../server/core/error-table.ts';
import { type OperatorRole, rolePolicyNames } from '../../server/core/roles.ts';
import { fetchTransport } from './fetch-transport.ts';
import {
  type HeaderReader,
  type HttpTransport,
  NoAnswerError,
  type OutgoingRequest,
  type TransportAnswer,
} from './transport.ts';

/**
 * Gives the headers to send with a request: its own and the proof of who sends it. SigV4 for a
 * deployed stack (sigv4.ts) and the node's proof (lib/clients/host/proof.ts) are signers.
 */
export type RequestSigner = (request: OutgoingRequest) => Promise<Record<string, string>>;

export type ApiAnswer = {
  readonly status: number;
  readonly headers: HeaderReader;
  /** Parsed JSON, or undefined for an empty body. */
  readonly body: unknown;
  /** On IAM's refusal of an operator route: the role its row names (ApiClientOptions.roleNeeded). */
  readonly needs?: RoleNeeded;
};

/** The role an operator route needs, and the route (`POST /nodes/{node}/token`). */
export type RoleNeeded = { readonly role: OperatorRole; readonly route: string };

/** Finds the role a request's route needs in the route table; the `mesh` CLI's reads lib/server/functions/table.ts. */
export type RoleLookup = (method: string, path: string) => Promise<RoleNeeded | undefined>;

/** The control plane could not be reached at all (refused, reset, timed out), or said to come back. */
export class ApiUnreachableError extends Error {
  override name = 'ApiUnreachableError';
  /** Why: the errno code (ECONNREFUSED, ENOTFOUND, …), `no answer in N s`, or `http_503` and the like. */
  readonly reason: string;
  constructor(message: string, reason: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** A 4xx/5xx from the control plane, with the code and message the API gave. */
export class ApiProblemError extends Error {
  override name = 'ApiProblemError';
  readonly status: number;
  readonly code: string;
  readonly headers: HeaderReader;
  readonly needs: RoleNeeded | undefined;
  constructor(status: number, code: string, message: string, headers: HeaderReader, needs?: RoleNeeded) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
    this.needs = needs;
  }
}

export type ApiClientOptions = {
  readonly signer?: RequestSigner;
  /** @default 60 s */
  readonly timeoutMs?: number;
  /** Asked on IAM's refusal (403 from API Gateway) for the role the call needs. @default none */
  readonly roleNeeded?: RoleLookup;
} & (
  | {
      /** How requests travel: a node's agent gives nodeHttpTransport. @default fetchTransport */
      readonly transport?: HttpTransport;
      readonly fetch?: never;
    }
  | {
      /** The fetch that fetchTransport sends with (a test's fake). @default the global fetch */
      readonly fetch?: typeof fetch;
      readonly transport?: never;
    }
);

/**
 * The one way the CLI, the host agent and enrolment talk to the control plane: JSON in, JSON
 * out, problems as answers (`send`) or errors (`call`), ApiUnreachableError when nothing answers.
 */
export class ApiClient {
  readonly baseUrl: string;
  private signer: RequestSigner | undefined;
  private readonly transport: HttpTransport;
  private readonly timeoutMs: number;
  private readonly roleNeeded: RoleLookup | undefined;

  constructor(baseUrl: string, options: ApiClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.signer = options.signer;
    this.transport = options.transport ?? fetchTransport(options.fetch);
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.roleNeeded = options.roleNeeded;
  }

  /** Signs every later request with `signer`: a node's key after a rotation. */
  useSigner(signer: RequestSigner | undefined): void {
    this.signer = signer;
  }

  /** Sends a request and returns whatever came back, problems included. */
  async send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request: OutgoingRequest = {
      method,
      url: new URL(`${this.baseUrl}${path}`),
      headers: {
        accept: 'application/json',
        ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
        ...lowerCased(headers),
      },
      ...(payload !== undefined ? { body: payload } : {}),
    };
    const signed = this.signer ? { ...request, headers: await this.signer(request) } : request;
    let answered: TransportAnswer;
    try {
      answered = await this.transport({ ...signed, timeoutMs: this.timeoutMs });
    } catch (error) {
      if (!(error instanceof NoAnswerError)) throw error;
      throw new ApiUnreachableError(
        `the control plane at ${this.baseUrl} could not be reached (${error.reason})`,
        error.reason,
        { cause: error },
      );
    }
    const answer = { status: answered.status, headers: answered.headers, body: answerBody(answered.text) };
    const needs = isIamRefusal(answer) ? await this.roleNeeded?.(method, path) : undefined;
    return needs ? { ...answer, needs } : answer;
  }

  /** Sends a request and throws ApiProblemError unless it succeeded. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.send(method, path, body);
    if (answer.status >= 400) throw problemError(answer);
    return answer.body as T;
  }
}

/** Header names as a signer signs them and HTTP compares them: in lower case. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

/** An answer's body: its JSON, undefined when empty, or a `not_json` problem holding its start. */
export function answerBody(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return { error: { code: 'not_json', message: text.slice(0, 200) } };
  }
}

/**
 * API Gateway's refusal of a signed request IAM does not allow: 403 with its gateway response's
 * type, ACCESS_DENIED, as the code (lib/deploy/api.ts), the message naming execute-api:Invoke.
 */
export function isIamRefusal(answer: ApiAnswer): boolean {
  const problem = (answer.body as Partial<ProblemBody> | undefined)?.error;
  return (
    answer.status === 403 &&
    (problem?.code === 'ACCESS_DENIED' || /execute-api:Invoke/.test(String(problem?.message ?? '')))
  );
}

export function problemError(answer: ApiAnswer): ApiProblemError {
  const problem = (answer.body as Partial<ProblemBody> | undefined)?.error;
  const message = problem?.message ?? `the control plane answered ${answer.status}`;
  return new ApiProblemError(
    answer.status,
    problem?.code ?? `http_${answer.status}`,
    answer.needs ? `${message}: ${roleSentence(answer.needs)}` : message,
    answer.headers,
    answer.needs,
  );
}

/** What an operator refused for want of a role is told. */
export const roleSentence = ({ role, route }: RoleNeeded): string =>
  `${route} needs the ${rolePolicyNames[role]} role (or higher)`;
