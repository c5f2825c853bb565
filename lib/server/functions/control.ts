import {
  buildRequest,
  catchUpRequest,
  controlBuildHandler,
  controlBuildRetractHandler,
  controlCatchUpHandler,
  controlReportResetHandler,
  controlUpgradeHandler,
  reportResetPath,
  retractRequest,
  upgradeRequest,
} from '../api/handlers/control.ts';
import { controlConsumerHandler } from '../api/handlers/control-consumer.ts';
import { hostReportHandler, reportPath, reportRequest } from '../api/handlers/host.ts';
import type { FunctionSpec } from './spec.ts';

/** The control area's functions: what puts messages on the control queue, and its consumer. */
export const controlFunctions = [
  {
    name: 'host-report',
    purpose: 'verifies the host, queues its report',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/hosts/{node}/reports',
      auth: 'host',
      request: { path: reportPath, body: reportRequest },
    },
    // nodeKeys:verify and proofs:write for host authentication (node keys; proof replay guard).
    access: ['nodeKeys:verify', 'proofs:write', 'control:send'],
    handler: hostReportHandler,
  },
  {
    name: 'control-build',
    purpose: 'queues a build result',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/builds',
      auth: 'operator',
      role: 'operator',
      request: { body: buildRequest },
    },
    access: ['control:send'],
    handler: controlBuildHandler,
  },
  {
    name: 'control-upgrade',
    purpose: 'queues an upgrade',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/upgrades',
      auth: 'operator',
      role: 'operator',
      request: { body: upgradeRequest },
    },
    // inventory:read: a module no node was ever assigned is refused before anything is queued
    access: ['inventory:read', 'control:send'],
    handler: controlUpgradeHandler,
  },
  {
    name: 'control-catch-up',
    purpose: 'queues a catch-up',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/catch-up',
      auth: 'operator',
      role: 'operator',
      request: { body: catchUpRequest },
    },
    access: ['control:send'],
    handler: controlCatchUpHandler,
  },
  {
    name: 'control-build-retract',
    purpose: "retracts a module's version: no build of it is the latest again",
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/builds/retractions',
      auth: 'operator',
      role: 'admin',
      request: { body: retractRequest },
    },
    access: ['inventory:read', 'inventory:write'],
    handler: controlBuildRetractHandler,
  },
  {
    name: 'control-report-reset',
    purpose: "forgets a node's kept report, so its host's next report is recorded",
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}/report',
      auth: 'operator',
      role: 'admin',
      request: { path: reportResetPath },
    },
    access: ['inventory:read', 'inventory:write'],
    handler: controlReportResetHandler,
  },
  {
    name: 'control-consumer',
    purpose: 'consumes the control queue: reports, builds, upgrades, catch-up; holds and dead-letters',
    trigger: 'queue',
    // control:send for catch-up's re-announced upgrades; pushFlow:start and inventory:write for upgrades;
    // rolloutFlow:start and rollouts:parts for an upgrade in waves, whose rollout it starts;
    // inventory:write also writes the audit records of the builds and upgrades it settles.
    access: [
      'inventory:read',
      'inventory:write',
      'control:consume',
      'control:send',
      'deadLetter:send',
      'pushFlow:start',
      'events:put',
      'pushWork:keep',
      'rolloutFlow:start',
      'rollouts:parts',
    ],
    handler: controlConsumerHandler,
  },
] as const satisfies readonly FunctionSpec[];
