import {
  idPath,
  pageQuery,
  rolloutAbortHandler,
  rolloutAdvanceHandler,
  rolloutListHandler,
  rolloutResumeHandler,
  rolloutShowHandler,
  rolloutStartHandler,
  rolloutUndoHandler,
  showQuery,
} from '../api/handlers/rollouts.ts';
import { rolloutRequest } from '../core/rollout/requests.ts';
import type { FunctionSpec } from './spec.ts';

/** Rollouts in waves (docs/decisions/rollouts-in-waves.md): start, list, show, resume, abort. */
export const rolloutFunctions = [
  {
    name: 'rollout-start',
    purpose:
      'records a push in waves (the nodes behind found, or the nodes given), its nodes to be claimed by the driver, and tells it',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/rollouts',
      auth: 'operator',
      role: 'operator',
      request: { body: rolloutRequest },
    },
    // inventory:read for the marked nodes a --behind or named rollout takes; write for its record;
    // summary:read for an agent upgrade's hosts by architecture, each needing a release
    access: ['inventory:read', 'inventory:write', 'rollouts:parts', 'rolloutFlow:start', 'summary:read'],
    timeoutSeconds: 29,
    handler: rolloutStartHandler,
  },
  {
    name: 'rollout-list',
    purpose: 'the rollouts, newest first, a page at a time, without their nodes',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/rollouts',
      auth: 'operator',
      role: 'viewer',
      request: { query: pageQuery },
    },
    access: ['inventory:read'],
    handler: rolloutListHandler,
  },
  {
    name: 'rollout-show',
    purpose: 'one rollout: every wave, every node with its outcome and the last step of a failed node',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/rollouts/{id}',
      auth: 'operator',
      role: 'viewer',
      request: { path: idPath, query: showQuery },
    },
    access: ['inventory:read'],
    handler: rolloutShowHandler,
  },
  {
    name: 'rollout-resume',
    purpose:
      'a paused or halted rollout goes on with its next wave; a running one whose flow died is started again',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/rollouts/{id}/resume',
      auth: 'operator',
      role: 'operator',
      request: { path: idPath },
    },
    access: ['inventory:read', 'inventory:write', 'rollouts:parts', 'rolloutFlow:start'],
    handler: rolloutResumeHandler,
  },
  {
    name: 'rollout-abort',
    purpose: 'stops a rollout: nothing more is sent, the nodes not sent stay behind',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/rollouts/{id}/abort',
      auth: 'operator',
      role: 'operator',
      request: { path: idPath },
    },
    access: ['inventory:read', 'inventory:write', 'rollouts:parts'],
    handler: rolloutAbortHandler,
  },
  {
    name: 'rollout-undo',
    purpose:
      "takes an upgrade back in the waves it sent: a module upgrade's undo asked on the control queue, an agent upgrade's recorded here and its flow started",
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/rollouts/{id}/undo',
      auth: 'operator',
      role: 'operator',
      request: { path: idPath },
    },
    // rolloutFlow:start for an agent upgrade's undo, which no queue message starts; summary:read
    // for its hosts by architecture, each needing a release of each version before
    access: [
      'inventory:read',
      'inventory:write',
      'rollouts:parts',
      'control:send',
      'rolloutFlow:start',
      'summary:read',
    ],
    // an agent upgrade's undo reads the nodes it sent and records its rollout in the request
    timeoutSeconds: 29,
    handler: rolloutUndoHandler,
  },
  {
    name: 'rollout-advance',
    purpose:
      'rollout flow: steps one rollout (claims its nodes, sends its next wave, or reads the reports of its hosts) until it waits',
    trigger: 'rollout-flow',
    // a wave is a run of the push flow; its record is read and written, its nodes' reports read,
    // and the unhealthy list (gsi2) for its nodes that turned unhealthy after their wave; a halt
    // with --auto-undo asks for its undo on the control queue, an agent upgrade's checked as
    // rollout-undo checks it (summary:read)
    access: [
      'inventory:read',
      'inventory:write',
      'inventory:views',
      'rollouts:parts',
      'pushFlow:start',
      'events:put',
      'pushWork:keep',
      'control:send',
      'summary:read',
    ],
    // a wave's push flow (Express) runs five minutes at most
    timeoutSeconds: 330,
    handler: rolloutAdvanceHandler,
  },
] as const satisfies readonly FunctionSpec[];
