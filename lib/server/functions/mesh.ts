import {
  assignBody,
  consumeBody,
  meshAssignHandler,
  meshConsumeHandler,
  meshDeclarationHandler,
  meshNodeAddHandler,
  meshPushHandler,
  meshPushPlanHandler,
  meshStatusHandler,
  moduleParams,
  nodeAddBody,
  nodeParams,
} from '../api/handlers/mesh.ts';
import {
  applyBody,
  applyJobPath,
  applyJobShowHandler,
  exportQuery,
  meshApplyAdvanceHandler,
  meshApplyHandler,
  meshApplyPruneHandler,
  meshExportHandler,
  meshPlanHandler,
  meshUploadHandler,
  planBody,
  uploadBody,
} from '../api/handlers/mesh-file.ts';
import {
  assignmentPath,
  cascadeQuery,
  meshNodeRemoveHandler,
  meshRotateHandler,
  meshUnassignHandler,
  meshUnconsumeHandler,
  relationPath,
  nodePath as removalNodePath,
  rotateBody,
} from '../api/handlers/mesh-removals.ts';
import {
  pushBeginHandler,
  pushFindBehindHandler,
  pushRunHandler,
  pushSendHandler,
} from '../api/handlers/push-tasks.ts';
import { viewQuerySchema } from '../api/view-query.ts';
import { meshFileBodyBytes } from '../core/mesh-file/read.ts';
import { uploadPartBodyBytes } from '../core/mesh-file/uploads.ts';
import { pushBodySchema, pushRequestSchema } from '../core/push/flow-schemas.ts';
import type { FunctionSpec } from './spec.ts';

/** The mesh area's functions: the operator's changes, push and its flow, status, what a node was sent. */
export const meshFunctions = [
  {
    name: 'mesh-node-add',
    purpose: 'adds a node',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/nodes',
      auth: 'operator',
      role: 'operator',
      request: { body: nodeAddBody },
    },
    // audit:write for the read of its chain's head (docs/audit.md)
    access: ['inventory:write', 'audit:write'],
    handler: meshNodeAddHandler,
  },
  {
    name: 'mesh-assign',
    purpose: 'assigns a module, marking the node',
    trigger: 'api',
    route: {
      method: 'PUT',
      path: '/nodes/{node}/modules/{module}',
      auth: 'operator',
      role: 'operator',
      request: { path: moduleParams, body: assignBody },
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshAssignHandler,
  },
  {
    name: 'mesh-consume',
    purpose: 'relates a consumer to a provider, marking the consumer',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/nodes/{node}/modules/{module}/consumes',
      request: { path: moduleParams, body: consumeBody },
      auth: 'operator',
      role: 'operator',
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshConsumeHandler,
  },
  {
    name: 'mesh-unconsume',
    purpose: 'withdraws a relation: the provision and the grant, marking both nodes',
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}/modules/{module}/consumes/{providerNode}/{providerModule}',
      request: { path: relationPath },
      auth: 'operator',
      role: 'operator',
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshUnconsumeHandler,
  },
  {
    name: 'mesh-unassign',
    purpose: 'takes a module off a node, with its relations (and, with cascade, its consumers)',
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}/modules/{module}',
      auth: 'operator',
      role: 'operator',
      request: { path: assignmentPath, query: cascadeQuery },
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshUnassignHandler,
  },
  {
    name: 'mesh-node-remove',
    purpose: 'takes a node out of the mesh with its token and host identity',
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}',
      auth: 'operator',
      role: 'admin',
      request: { path: removalNodePath, query: cascadeQuery },
    },
    access: ['inventory:read', 'inventory:write', 'hostIdentity:revoke', 'signal:publish'],
    handler: meshNodeRemoveHandler,
  },
  {
    name: 'mesh-rotate',
    purpose: 'mints a new secret for a provision, marking both nodes',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/nodes/{node}/modules/{module}/consumes/{providerNode}/{providerModule}/rotate',
      request: { path: relationPath, body: rotateBody },
      auth: 'operator',
      role: 'operator',
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshRotateHandler,
  },
  {
    name: 'mesh-push',
    purpose:
      'records a push and runs it in push-run, answers its outcome when it finishes in time, else its id',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/push',
      auth: 'operator',
      role: 'operator',
      request: { body: pushBodySchema },
    },
    access: ['inventory:read', 'pushes:write', 'pushRun:invoke', 'audit:write'],
    timeoutSeconds: 29,
    handler: meshPushHandler,
  },
  {
    name: 'push-run',
    purpose: 'runs a push mesh-push recorded on the push state machine and keeps its outcome in its record',
    trigger: 'invoke',
    // It invokes itself too, by its function's policy (connectPushRunner in lib/deploy/functions.ts).
    access: ['pushes:write', 'pushes:progress', 'pushFlow:start', 'pushWork:keep', 'events:put'],
    // Lambda's most: a push runs as executions of the flow chained here, each under Express's
    // five minutes, and is handed on to a fresh invocation of itself before this runs out
    // (lib/server/core/push/executions.ts).
    timeoutSeconds: 900,
    handler: pushRunHandler,
  },
  {
    name: 'mesh-push-plan',
    purpose: 'what a push would send, each node with its changes; writes nothing',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/push/plan',
      auth: 'operator',
      role: 'viewer',
      request: { body: pushRequestSchema },
    },
    // Reads only: a plan that wrote anything would be refused by its own role on AWS.
    access: ['inventory:read', 'inventory:list'],
    timeoutSeconds: 29,
    handler: meshPushPlanHandler,
  },
  {
    name: 'mesh-status',
    purpose: 'every node: enrolled, sent, applied, behind, last heard',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/status',
      auth: 'operator',
      role: 'viewer',
      request: { query: viewQuerySchema },
    },
    access: ['inventory:read', 'inventory:list', 'inventory:views'],
    timeoutSeconds: 29,
    handler: meshStatusHandler,
  },
  {
    name: 'mesh-declaration',
    purpose: 'what the node was last sent',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/nodes/{node}/declaration',
      auth: 'operator',
      role: 'viewer',
      request: { path: nodeParams },
    },
    access: ['inventory:read'],
    handler: meshDeclarationHandler,
  },
  {
    name: 'mesh-export',
    purpose: 'the mesh as a file (YAML or JSON) that reproduces it',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/mesh/export',
      auth: 'operator',
      role: 'viewer',
      request: { query: exportQuery },
    },
    access: ['inventory:scan'],
    timeoutSeconds: 29,
    handler: meshExportHandler,
  },
  {
    name: 'mesh-plan',
    purpose: 'the plan of a mesh file against the live mesh; writes nothing',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/mesh/plan',
      request: { body: planBody },
      auth: 'operator',
      role: 'viewer',
      bodyBytes: meshFileBodyBytes,
    },
    // inventory:read for a file uploaded in parts, which the plan names instead of carrying
    access: ['inventory:scan', 'inventory:read'],
    timeoutSeconds: 29,
    handler: meshPlanHandler,
  },
  {
    name: 'mesh-upload',
    purpose:
      'starts an upload of a mesh file too large for one request, or keeps one of its parts when its bytes have the SHA-256 sent',
    trigger: 'api',
    // uploading is part of applying: an operator's, as POST /mesh/apply is
    route: {
      method: 'POST',
      path: '/mesh/uploads',
      request: { body: uploadBody },
      auth: 'operator',
      role: 'operator',
      bodyBytes: uploadPartBodyBytes,
    },
    access: ['inventory:read', 'inventory:write'],
    handler: meshUploadHandler,
  },
  {
    name: 'mesh-apply',
    purpose:
      'applies a mesh file without removing anything: adds in bulk, as much as the request has time for',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/mesh/apply',
      request: { body: applyBody },
      auth: 'operator',
      role: 'operator',
      bodyBytes: meshFileBodyBytes,
    },
    // No removal: a prune is mesh-apply-prune's, an admin's (a removal and a disenrolment), so
    // this function can neither revoke a host's identity nor signal a removed host.
    // What the request has no time for goes on as a job, in the apply flow.
    access: ['inventory:scan', 'inventory:read', 'inventory:write', 'applyFlow:start', 'events:put'],
    timeoutSeconds: 29,
    handler: meshApplyHandler,
  },
  {
    name: 'mesh-apply-prune',
    purpose:
      'applies a mesh file and prunes: removes through the removal rules, adds in bulk, as much as the request has time for',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/mesh/apply/prune',
      request: { body: applyBody },
      auth: 'operator',
      // A prune removes nodes as mesh-node-remove does, and a node applied again is a new,
      // unenrolled one: both an admin's.
      role: 'admin',
      bodyBytes: meshFileBodyBytes,
    },
    // A prune removes nodes as mesh-node-remove does: their identity revoked, their hosts signalled.
    access: [
      'inventory:scan',
      'inventory:read',
      'inventory:write',
      'hostIdentity:revoke',
      'signal:publish',
      'applyFlow:start',
      'events:put',
    ],
    timeoutSeconds: 29,
    handler: meshApplyPruneHandler,
  },
  {
    name: 'apply-job-show',
    purpose: 'one apply job: its state, options, who asked and its progress, without its file',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/mesh/apply-jobs/{id}',
      auth: 'operator',
      role: 'viewer',
      request: { path: applyJobPath },
    },
    access: ['inventory:read'],
    handler: applyJobShowHandler,
  },
  {
    name: 'mesh-apply-advance',
    purpose: 'apply flow: applies the next part of an apply job in the time it has, and records its progress',
    trigger: 'apply-flow',
    // what mesh-apply's request does, part after part
    access: [
      'inventory:scan',
      'inventory:read',
      'inventory:write',
      'applyJobs:plan',
      'hostIdentity:revoke',
      'signal:publish',
      'events:put',
    ],
    // a part writes until 20 s before the end (lib/server/core/mesh-file/apply-jobs.ts, advanceMarginMs)
    timeoutSeconds: 300,
    handler: meshApplyAdvanceHandler,
  },
  {
    name: 'push-begin',
    purpose: 'push flow: validates the request, composes and sends the named node',
    trigger: 'flow',
    access: ['inventory:read', 'inventory:write', 'signal:publish', 'pushWork:keep'],
    handler: pushBeginHandler,
  },
  {
    name: 'push-find-behind',
    purpose: 'push flow: finds the nodes behind now; at the bound, names what is still behind',
    trigger: 'flow',
    // Reads the mesh only: marks and nodes (every node for an audit); at the bound it composes to
    // check. pushes:progress notes each round in the push's record; pushWork:keep keeps the lists.
    access: ['inventory:read', 'inventory:list', 'pushes:progress', 'pushWork:keep'],
    timeoutSeconds: 60,
    handler: pushFindBehindHandler,
  },
  {
    name: 'push-send',
    purpose: 'push flow: composes and sends one batch of nodes',
    trigger: 'flow',
    access: ['inventory:read', 'inventory:write', 'signal:publish', 'pushes:progress', 'pushWork:keep'],
    timeoutSeconds: 60,
    handler: pushSendHandler,
  },
] as const satisfies readonly FunctionSpec[];
