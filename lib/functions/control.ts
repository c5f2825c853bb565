import type { FunctionSpec } from './spec.ts';

/** The control area's functions. */
export const controlFunctions: readonly FunctionSpec[] = [
  {
    name: 'host-report',
    purpose: 'POST /hosts/{node}/reports: verifies the host, queues its report',
    // identity:read and proofs:write for host authentication (node keys; proof replay guard).
    access: ['identity:read', 'inventory:read', 'proofs:write', 'control:send'],
    trigger: 'api',
  },
  {
    name: 'control-build',
    purpose: 'POST /builds: queues a build result',
    access: ['control:send'],
    trigger: 'api',
  },
  {
    name: 'control-upgrade',
    purpose: 'POST /upgrades: queues an upgrade',
    access: ['control:send'],
    trigger: 'api',
  },
  {
    name: 'control-catch-up',
    purpose: 'POST /catch-up: queues a catch-up',
    access: ['control:send'],
    trigger: 'api',
  },
  {
    name: 'control-consumer',
    purpose: 'consumes the control queue: reports, builds, upgrades, catch-up; holds and dead-letters',
    // control:send for catch-up's re-announced upgrades; pushFlow:start and inventory:write for upgrades.
    access: [
      'inventory:read',
      'inventory:write',
      'control:consume',
      'control:send',
      'deadLetter:send',
      'pushFlow:start',
    ],
    trigger: 'queue',
  },
];
