import type { ProblemBody } from '../../server/core/error-table.ts';
import { type OperatorRole, rolePolicyNames } from '../../server/core/roles.ts';

/** Signs a request before it is sent; the SigV4 signer for a deployed stack is one. */
export type RequestSigner = (request: Request) => Promise<Request>;

/** What callers read of an answer's headers; fetch's Headers is one, the host agent's client another. */
export type HeaderReader = { get(name: string): string | null };

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

/** The control plane could not be reached at all (refused, reset, timed out). */
export class ApiUnreachableError extends Error {
  override name = 'ApiUnreachableError';
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
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  /** Asked on IAM's refusal (403 from API Gateway) for the role the call needs. @default none */
  readonly roleNeeded?: RoleLookup;
};

/** The one way the CLIs talk to the control plane: JSON in, JSON out, problems as errors. */
export class ApiClient {
  readonly baseUrl: string;
  private readonly options: ApiClientOptions;

  constructor(baseUrl: string, options: ApiClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.options = options;
  }

  /** Sends a request and returns whatever came back, problems included. */
  async send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
    let request = new Request(`${this.baseUrl}${path}`, {
      method,
      headers: {
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
    });
    if (this.options.signer) request = await this.options.signer(request);
    let response: Response;
    try {
      response = await (this.options.fetch ?? fetch)(request);
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
      throw new ApiUnreachableError(`the control plane at ${this.baseUrl} could not be reached (${cause})`);
    }
    const answer = {
      status: response.status,
      headers: response.headers,
      body: answerBody(await response.text()),
    };
    const needs = isIamRefusal(answer) ? await this.options.roleNeeded?.(method, path) : undefined;
    return needs ? { ...answer, needs } : answer;
  }

  /** Sends a request and throws ApiProblemError unless it succeeded. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.send(method, path, body);
    if (answer.status >= 400) throw problemError(answer);
    return answer.body as T;
  }
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
