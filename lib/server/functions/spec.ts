import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
  DynamoDBRecord,
  IoTCustomAuthorizerEvent,
  IoTCustomAuthorizerResult,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import type { ZodType } from 'zod';
import type { SteppingTrigger } from '../flows/stepping-flows.ts';

/**
 * What a function may touch; the CDK grants exactly these to its role and nothing else
 * (lib/deploy/grants.ts holds each one's statements).
 *
 * - `inventory:read`: GetItem, BatchGetItem and Query on the inventory; `inventory:write`:
 *   PutItem, UpdateItem, DeleteItem and a transaction's ConditionCheck. Nothing else the SDK
 *   offers (BatchWriteItem, DescribeTable, streams) serves any code. The identity table
 *   is reached through the narrower accesses below only.
 * - `audit:refusals`: UpdateItem on `audit#refused#*` partitions only: the refused requests'
 *   counters (docs/audit.md). Every API function has it (`accessesOf`), as every HTTP edge counts.
 * - `audit:write`: the audit record of a change, in the change's transaction: GetItem and
 *   PutItem on `audit#` partitions only (a chain's head, its records, the list of chains).
 *   `audit:read`: GetItem and Query there, and Query on gsi1's `audit#day#` partitions only.
 * - `inventory:list`: Query on the inventory's index for its `mesh#node` partition only: the
 *   list of every node (status, the node list and graph, the audit).
 * - `inventory:views`: Query on gsi2 for its `view#` partitions only: the sparse lists of failed,
 *   offline and unhealthy nodes that a filtered page of status, the node list or the graph walks
 *   (and a rollout's step, for its nodes that turned unhealthy).
 * - `inventory:scan`: Scan of the inventory table: the whole live mesh in one pass, read only
 *   by the mesh file's export, plan and apply, and the apply flow's step
 *   (lib/server/adapters/mesh-file/live-mesh-reader.ts).
 * - `proofs:write`: PutItem on `proof#` partitions only (the host proof replay guard), so a
 *   host route can remember proof ids without being able to write the inventory.
 * - `pushes:write`: PutItem on the `pushes` partition only (the records of pushes);
 *   `pushes:progress`: UpdateItem there only (a running push's progress, by the flow).
 * - `pushWork:keep`: BatchWriteItem and Query on `pushwork#` partitions only: the node lists a
 *   push's flow keeps while it runs (its steps, and whoever starts it and reads its outcome).
 * - `presence:write`: UpdateItem and a ConditionCheck on node partitions only (`node#*`).
 * - `nodeKeys:verify`: BatchGetItem of node partitions of the identity table, which
 *   holds node keys and which one is enrolled: what a host proof is checked against, and no
 *   access to the inventory, where token hashes and provisions are.
 * - `deliveries:read`: GetItem on node partitions of the inventory and on the partitions of
 *   declarations kept in parts (`declaration#*`): what a node was sent. The
 *   node is the one the request names, so IAM cannot hold the function to one node's items.
 * - `tokens:issue`: a node's token read and put, the node's item checked (node partitions only);
 *   `tokens:revoke`: a node's token updated and read back (node partitions only).
 * - `tokens:enrol`: what enrolment does (docs/decisions/claimed-not-spent-tokens.md): the named node's token read, claimed and
 *   spent with its enrolment (GetItem, UpdateItem, PutItem on inventory node partitions), its
 *   keys and `enrolled` item put and the losers' keys pruned (PutItem, Query, DeleteItem on
 *   identity node partitions). No Query, Scan or batch of the inventory, no index.
 * - `hostIdentity:revoke`: a node's token, enrolment and keys deleted (node partitions only).
 * - `keys:rotate`: a node's keys replaced (lib/server/core/enrolment/rotation.ts): the new keys put and
 *   the old pruned, the enrolment, the spent token and the `enrolled` item switched (GetItem,
 *   UpdateItem on inventory node partitions; PutItem, UpdateItem, Query, DeleteItem on identity
 *   node partitions).
 * - `control:send` / `deadLetter:send`: SendMessage alone. `control:consume`: what the event
 *   source mapping needs (ReceiveMessage, DeleteMessage, GetQueueAttributes) and
 *   ChangeMessageVisibility for holds. `deadLetter:inspect`: GetQueueAttributes alone.
 * - `rolloutFlow:start`: StartExecution on the rollout state machine, and ListExecutions to see
 *   whether one still steps a rollout (docs/decisions/rollouts-in-waves.md).
 * - `applyFlow:start`: StartExecution on the apply state machine (docs/mesh-file.md, "An apply as a job").
 * - `pushFlow:start`: StartSyncExecution on the push state machine; `pushRun:invoke`:
 *   lambda:InvokeFunction on the push-run function alone.
 * - `summary:read`: GetItem and Query on the summary's partitions (`summary#*`) only: the counters.
 * - `summary:count`: what the stream aggregator does: GetItem, UpdateItem and PutItem on the
 *   summary's partitions only, and the inventory's stream read (what its event source mapping
 *   needs: DescribeStream, GetRecords, GetShardIterator, ListStreams).
 * - `summary:rebuild`: the counters written again from a Scan of the inventory (docs/summary.md).
 * - `releases:upload`: s3:PutObject on the release bucket's `executables/*`, what a presigned
 *   upload of an executable is made with; `releases:read`: s3:GetObject there (a publish's
 *   HeadObject, a host's presigned download) and s3:ListBucket on the bucket (a missing object
 *   answers 404, not 403).
 * - `signal:publish`: iot:Publish and iot:RetainPublish (the signal is retained) on the nodes'
 *   signal topics only.
 * - `events:put`: events:PutEvents on the stack's own bus only (docs/events.md): every function
 *   that tells of a change it made (a push finished, a rollout's step, presence, enrolment…).
 */
export type Access =
  | 'audit:refusals'
  | 'audit:write'
  | 'audit:read'
  | 'inventory:read'
  | 'inventory:list'
  | 'rollouts:parts'
  | 'inventory:views'
  | 'inventory:scan'
  | 'inventory:write'
  | 'proofs:write'
  | 'pushes:write'
  | 'pushes:progress'
  | 'pushWork:keep'
  | 'applyJobs:plan'
  | 'nodeKeys:verify'
  | 'deliveries:read'
  | 'tokens:issue'
  | 'tokens:revoke'
  | 'tokens:enrol'
  | 'hostIdentity:revoke'
  | 'keys:rotate'
  | 'control:send'
  | 'control:consume'
  | 'deadLetter:send'
  | 'deadLetter:inspect'
  | 'pushFlow:start'
  | 'rolloutFlow:start'
  | 'applyFlow:start'
  | 'pushRun:invoke'
  | 'pushRun:invoke'
  | 'releases:upload'
  | 'releases:read'
  | 'signal:publish'
  | 'presence:write'
  | 'events:put'
  | 'summary:read'
  | 'summary:count'
  | 'summary:rebuild';

/**
 * How a route is authenticated:
 * - operator: SigV4 (IAM) on API Gateway; open on the local runtime, which only listens on loopback
 * - host: a proof-of-possession signature by the node's enrolled key: the host authorizer on
 *   API Gateway, then the handler's own hostAuthentication(), which also checks the body and
 *   spends the proof id
 * - token: the one-time enrolment token in the body, throttled on API Gateway
 * - none: no authentication (health)
 */
export type RouteAuth = 'operator' | 'host' | 'token' | 'none';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Who among operators may call a route (lib/server/functions/roles.ts; the IAM managed policies MeshViewer,
 * MeshOperator, MeshAdmin of lib/deploy/operator-roles.ts): `viewer` every read,
 * `operator` the changes, pushes, applies, upgrades and rollouts, `admin` tokens, disenrolment,
 * node removal, report resets and build retractions. Each role may call its own routes and those of
 * the roles before it.
 */
import type { OperatorRole } from '../core/roles.ts';

export type { OperatorRole } from '../core/roles.ts';

/**
 * What a route's handler takes, as the zod schemas it validates with: its path parameters, its
 * query string and its JSON body. A route with none of them takes nothing beyond its path.
 */
export type RouteRequest = {
  readonly path?: ZodType;
  readonly query?: ZodType;
  readonly body?: ZodType;
};

/**
 * A route: an operator route names its role, and only an operator route names one (a host proves
 * its key, a token is its own authority), so a row without it does not type.
 */
export type RouteSpec = {
  readonly method: HttpMethod;
  readonly path: string;
  /** The schemas its handler validates the request with: docs/openapi.json is generated from them. */
  readonly request?: RouteRequest;
  /** The largest body taken, when a route needs more than maxBodyBytes (lib/server/api/http.ts). */
  readonly bodyBytes?: number;
} & (
  | { readonly auth: 'operator'; readonly role: OperatorRole }
  | { readonly auth: Exclude<RouteAuth, 'operator'>; readonly role?: never }
);

export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type AuthorizerHandler = (
  event: APIGatewayRequestAuthorizerEvent,
) => Promise<APIGatewayAuthorizerResult>;
export type QueueHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
/** A batch of one shard of a table's stream, with the shard's id (a tumbling window puts it there). */
export type StreamHandler = (event: {
  readonly Records: readonly DynamoDBRecord[];
  readonly shardId?: string;
}) => Promise<{ readonly state: Record<string, string> }>;
export type FlowTaskHandler = (input: unknown) => Promise<unknown>;
/** A stepping flow's Task: it may bound its work by the invocation's remaining time. */
export type SteppingTaskHandler = (
  input: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
) => Promise<unknown>;
export type BrokerAuthorizerHandler = (event: IoTCustomAuthorizerEvent) => Promise<IoTCustomAuthorizerResult>;
export type BrokerLifecycleHandler = (event: unknown) => Promise<unknown>;
/** A function another one invokes without waiting (InvocationType Event); it may invoke itself again. */
export type InvokedHandler = (
  event: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis' | 'invokedFunctionArn'>,
) => Promise<void>;

type Common = {
  /** The handler's file in functions/, without extension. */
  readonly name: string;
  readonly purpose: string;
  readonly access: readonly Access[];
  /** @default 10 (api, authorizer, flow) or consumerTimeoutSeconds (queue) */
  readonly timeoutSeconds?: number;
  /** @default 256 */
  readonly memoryMb?: number;
  /** Reserved concurrency: at most this many at once. @default none (the account's pool) */
  readonly reservedConcurrency?: number;
};

/**
 * One row says everything about a function: its file, what it does, what it may touch, how it
 * is reached (a route, the host authorizer, the control queue, a push flow task, the broker's
 * authorizer or its lifecycle events) and the
 * factory that builds its handler from what it is given (`Deps`). functions/<name>.ts calls the
 * same factory; the local runtime, the CDK and the tests read the rows.
 *
 * Each factory names the ports it takes (its deps type, beside it in lib/api/handlers/), so a
 * row does not know the composition root. A table of rows is typed with `Deps = never`, which
 * any factory fits; a handler is built only where something that satisfies every row's ports
 * is at hand: functions/<name>.ts and lib/runtime/, both with lib/server/wiring/parts.ts's parts, which are
 * checked there against the ports of each row (lib/server/functions/table.ts keeps every row's own type).
 */
export type FunctionSpec<Deps = never> =
  | (Common & {
      readonly trigger: 'api';
      readonly route: RouteSpec;
      readonly handler: (deps: Deps) => ApiHandler;
    })
  | (Common & { readonly trigger: 'authorizer'; readonly handler: (deps: Deps) => AuthorizerHandler })
  | (Common & { readonly trigger: 'queue'; readonly handler: (deps: Deps) => QueueHandler })
  | (Common & { readonly trigger: 'flow'; readonly handler: (deps: Deps) => FlowTaskHandler })
  /** A stepping flow's one Task (lib/server/flows/stepping-flows.ts): a Standard workflow, not the push flow. */
  | (Common & { readonly trigger: SteppingTrigger; readonly handler: (deps: Deps) => SteppingTaskHandler })
  | (Common & { readonly trigger: 'stream'; readonly handler: (deps: Deps) => StreamHandler })
  | (Common & {
      readonly trigger: 'broker-authorizer';
      readonly handler: (deps: Deps) => BrokerAuthorizerHandler;
    })
  | (Common & {
      readonly trigger: 'broker-lifecycle';
      readonly handler: (deps: Deps) => BrokerLifecycleHandler;
    })
  | (Common & { readonly trigger: 'invoke'; readonly handler: (deps: Deps) => InvokedHandler });

export type ApiFunctionSpec<Deps = never> = Extract<FunctionSpec<Deps>, { trigger: 'api' }>;

/** What a row is granted: its accesses, and for an API function the refusals' counters its edge writes. */
export const accessesOf = (spec: Pick<FunctionSpec, 'trigger' | 'access'>): readonly Access[] =>
  spec.trigger === 'api' ? [...spec.access, 'audit:refusals'] : spec.access;
