import { ErrorTable, internal, refused, relaying, tryAgain } from '../error-table.ts';
import { signalHeader } from '../signal/channel.ts';
import { storeErrors } from '../unavailable.ts';

/** The mesh area's errors, and at the end their table (lib/server/core/error-table.ts): one row each. */
export class MeshError extends Error {
  override name = 'MeshError';
}

export class NodeNotFoundError extends MeshError {
  override name = 'NodeNotFoundError';
  readonly node: string;
  constructor(node: string, options?: ErrorOptions) {
    super(`no node named ${node}`, options);
    this.node = node;
  }
}

export class ModuleNotAssignedError extends MeshError {
  override name = 'ModuleNotAssignedError';
  readonly node: string;
  readonly module: string;
  constructor(node: string, module: string, options?: ErrorOptions) {
    super(`module ${module} is not assigned to node ${node}`, options);
    this.node = node;
    this.module = module;
  }
}

export class NodeExistsError extends MeshError {
  override name = 'NodeExistsError';
  constructor(node: string, options?: ErrorOptions) {
    super(`node ${node} already exists`, options);
  }
}

export class AlreadyAssignedError extends MeshError {
  override name = 'AlreadyAssignedError';
  constructor(node: string, module: string, options?: ErrorOptions) {
    super(`module ${module} is already assigned to node ${node}`, options);
  }
}

/** The module exists with another provider kind (or none); a module's kind is mesh-wide and set once. */
export class ProviderKindConflictError extends MeshError {
  override name = 'ProviderKindConflictError';
  constructor(module: string, existing: string | null, wanted: string | null, options?: ErrorOptions) {
    super(
      `module ${module} ${existing ? `provides ${existing}` : 'is not a provider'}; it cannot be assigned as ${
        wanted ? `a provider of ${wanted}` : 'a non-provider'
      }`,
      options,
    );
  }
}

export class NotAProviderError extends MeshError {
  override name = 'NotAProviderError';
  constructor(node: string, module: string, options?: ErrorOptions) {
    super(`module ${module} on node ${node} is not a provider (assign it with --provides KIND)`, options);
  }
}

export class DuplicateRelationError extends MeshError {
  override name = 'DuplicateRelationError';
  constructor(consumer: string, provider: string, options?: ErrorOptions) {
    super(`${consumer} already consumes ${provider}`, options);
  }
}

export class SelfConsumptionError extends MeshError {
  override name = 'SelfConsumptionError';
  constructor(module: string, options?: ErrorOptions) {
    super(`${module} cannot consume itself`, options);
  }
}

/** A consumer→provider relation that does not exist. */
export class RelationNotFoundError extends MeshError {
  override name = 'RelationNotFoundError';
  constructor(consumer: string, provider: string, options?: ErrorOptions) {
    super(`${consumer} does not consume ${provider}`, options);
  }
}

/** The relation exists but its provision was never minted: there is no secret to rotate yet. */
export class ProvisionNotMintedError extends MeshError {
  override name = 'ProvisionNotMintedError';
  constructor(consumer: string, provider: string, options?: ErrorOptions) {
    super(
      `${consumer}'s provision from ${provider} was never minted, so there is no secret to rotate: push ${consumer.split('/')[0]} to mint one`,
      options,
    );
  }
}

/** A removal would leave other modules consuming what no longer exists; `--cascade` removes them too. */
export class HasDependentsError extends MeshError {
  override name = 'HasDependentsError';
  /** Each dependent relation, `consumer-node/module -> provider-node/module`. */
  readonly dependents: readonly string[];
  constructor(what: string, dependents: readonly string[], options?: ErrorOptions) {
    super(
      `${what} is consumed by ${dependents.join(', ')}: remove those relations first, or remove them with it (--cascade)`,
      options,
    );
    this.dependents = dependents;
  }
}

/** The removal touches more items than one transaction can hold; it is refused rather than done in parts. */
export class RemovalTooLargeError extends MeshError {
  override name = 'RemovalTooLargeError';
  constructor(what: string, items: number, limit: number, options?: ErrorOptions) {
    super(
      `removing ${what} would change ${items} items, more than the ${limit} one transaction can hold; remove its relations or modules first`,
      options,
    );
  }
}

/** A change would take a node past one of its limits (lib/server/core/mesh/limits.ts). */
export class LimitReachedError extends MeshError {
  override name = 'LimitReachedError';
  readonly node: string;
  readonly limit: string;
  readonly max: number;
  constructor(node: string, limit: string, max: number, what: string, options?: ErrorOptions) {
    super(`node ${node} already has ${max} ${what}, its limit (${limit}); remove some first`, options);
    this.node = node;
    this.limit = limit;
    this.max = max;
  }
}

/**
 * A node's declaration composed larger than one declaration may be: the push does not send it,
 * names it in `behind` with this reason, and goes on with the others.
 */
export class DeclarationTooLargeError extends MeshError {
  override name = 'DeclarationTooLargeError';
  readonly node: string;
  constructor(node: string, bytes: number, max: number, options?: ErrorOptions) {
    super(
      `${node}'s declaration would be ${bytes} bytes, over the ${max} one declaration may be; remove modules or relations from it`,
      options,
    );
    this.node = node;
  }
}

/** A write raced with another and lost; the caller reads again and retries. */
export class MeshRaceError extends MeshError {
  override name = 'MeshRaceError';
  readonly race: 'revision' | 'mint' | 'mark' | 'model' | 'claim';
  readonly old: unknown;
  constructor(race: MeshRaceError['race'], old?: unknown, options?: ErrorOptions) {
    super(`a concurrent write won (${race})`, options);
    this.race = race;
    this.old = old;
  }
}

/** Kept losing races; nothing half-done, the push can be run again. */
export class PushContentionError extends MeshError {
  override name = 'PushContentionError';
  readonly node: string;
  constructor(node: string, options?: ErrorOptions) {
    super(`another push holds node ${node}: it kept changing while this push was sending it`, options);
    this.node = node;
  }
}

/**
 * An upgrade named a module no node was ever assigned: recording it would invent the module
 * with no kind, and its first `assign --provides` would then be refused for good.
 */
export class ModuleNotFoundError extends MeshError {
  override name = 'ModuleNotFoundError';
  readonly module: string;
  constructor(module: string, options?: ErrorOptions) {
    super(`no module named ${module}: assign it to a node before upgrading it`, options);
    this.module = module;
  }
}

/**
 * The push flow ended without an answer. `error` is the name of what failed (a Task's error
 * name, e.g. `NodeNotFoundError`, or a Step Functions one such as `States.Timeout`): the flow
 * carries names across its boundary, not classes, so the handler maps the name.
 */
export class PushFlowFailedError extends MeshError {
  override name = 'PushFlowFailedError';
  readonly error: string;
  constructor(error: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.error = error;
  }
}

/** A push record's write found it already started (a repeated id) or already done; nothing was written. */
export class PushRecordConflictError extends MeshError {
  override name = 'PushRecordConflictError';
  constructor(id: string, step: 'start' | 'finish', options?: ErrorOptions) {
    super(`push ${id} is already ${step === 'start' ? 'recorded' : 'done'}`, options);
  }
}

/** The push flow could not be started now (Step Functions throttled, failing or unreachable). */
export class PushFlowUnavailableError extends MeshError {
  override name = 'PushFlowUnavailableError';
}

/**
 * A node that has been sent no declaration yet. `signal` is the node's change signal (JSON), given
 * with the answer to its host so it can wait for the first push rather than poll.
 */
export class NotSentError extends MeshError {
  override name = 'NotSentError';
  readonly signal: string | undefined;
  constructor(node: string, signal?: string) {
    super(`nothing was sent to ${node} yet; push it first`);
    this.signal = signal;
  }
}

/** A push whose record is not kept: never started, or gone after 90 days. */
export class PushNotFoundError extends MeshError {
  override name = 'PushNotFoundError';
  constructor(push: string) {
    super(`no push ${push} is kept (records go after 90 days)`);
  }
}

/** Contention is "not now", not "no": nothing was half-done and the same request can succeed. */
const contention = { retryAfterSeconds: 1 };

/** What the push flow's Tasks fail with when Lambda itself could not run them now. */
const lambdaFault = tryAgain(undefined, {
  says: 'the push flow could not run its steps',
  messageShown: false,
  retriedByFlow: true,
});

export const meshErrors = new ErrorTable({
  MeshError: internal(MeshError),
  NodeNotFoundError: refused(NodeNotFoundError, 404, 'node_not_found'),
  ModuleNotAssignedError: refused(ModuleNotAssignedError, 404, 'module_not_assigned'),
  NodeExistsError: refused(NodeExistsError, 409, 'node_exists'),
  AlreadyAssignedError: refused(AlreadyAssignedError, 409, 'already_assigned'),
  ProviderKindConflictError: refused(ProviderKindConflictError, 409, 'provider_kind_conflict'),
  NotAProviderError: refused(NotAProviderError, 422, 'not_a_provider'),
  DuplicateRelationError: refused(DuplicateRelationError, 409, 'duplicate_relation'),
  SelfConsumptionError: refused(SelfConsumptionError, 422, 'self_consumption'),
  RelationNotFoundError: refused(RelationNotFoundError, 404, 'relation_not_found'),
  ProvisionNotMintedError: refused(ProvisionNotMintedError, 409, 'not_minted'),
  HasDependentsError: refused(HasDependentsError, 409, 'has_dependents', { details: (e) => e.dependents }),
  RemovalTooLargeError: refused(RemovalTooLargeError, 422, 'removal_too_large'),
  LimitReachedError: refused(LimitReachedError, 422, 'limit_reached', {
    details: (e) => ({ node: e.node, limit: e.limit, max: e.max }),
  }),
  // The push names the node in `unsendable` and goes on; it never ends a request.
  DeclarationTooLargeError: internal(DeclarationTooLargeError),
  MeshRaceError: tryAgain(MeshRaceError, contention),
  PushContentionError: tryAgain(PushContentionError, contention),
  // POST /upgrades refuses it; met again while an upgrade is settled (the module unassigned
  // since), the queue rejects the message (lib/server/core/control/settle.ts).
  ModuleNotFoundError: refused(ModuleNotFoundError, 404, 'module_not_found'),
  PushFlowFailedError: relaying(PushFlowFailedError, (e) => e.error),
  PushFlowUnavailableError: tryAgain(PushFlowUnavailableError, {
    says: 'the push flow could not be started',
  }),
  PushRecordConflictError: internal(PushRecordConflictError),
  NotSentError: refused(NotSentError, 404, 'not_sent', {
    headers: (e): Record<string, string> => (e.signal ? { [signalHeader]: e.signal } : {}),
  }),
  PushNotFoundError: refused(PushNotFoundError, 404, 'push_not_found'),
  'Lambda.TooManyRequestsException': lambdaFault,
  'Lambda.ServiceException': lambdaFault,
  'Lambda.AWSLambdaException': lambdaFault,
  'Lambda.SdkClientException': lambdaFault,
});

/**
 * What a push can fail with, by the name its record and the flow carry: the mesh's errors, the
 * push flow's own and a store that stayed away.
 */
export const pushFailures = new ErrorTable({}, storeErrors, meshErrors);
