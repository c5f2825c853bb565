import {
  hostReleaseHandler,
  hostReleasePath,
  listReleasesHandler,
  publishBody,
  publishReleaseHandler,
} from '../api/handlers/agent-releases.ts';
import type { FunctionSpec } from './spec.ts';

/** The agent's releases (docs/host-agent.md, "Releases"): published by an admin, fetched by hosts. */
export const agentReleaseFunctions = [
  {
    name: 'agent-release-publish',
    purpose:
      "publishes a signed release of mesh-host: grants its executable's upload, then checks and stores it",
    trigger: 'api',
    // Admin: a release runs as root on every host that upgrades to it, as a token makes a host.
    route: {
      method: 'POST',
      path: '/agent/releases',
      auth: 'operator',
      role: 'admin',
      request: { body: publishBody },
    },
    access: ['inventory:read', 'inventory:write', 'audit:write', 'releases:upload', 'releases:read'],
    handler: publishReleaseHandler,
  },
  {
    name: 'agent-release-list',
    purpose: 'the releases of mesh-host published, newest first',
    trigger: 'api',
    route: { method: 'GET', path: '/agent/releases', auth: 'operator', role: 'viewer' },
    access: ['inventory:read'],
    handler: listReleasesHandler,
  },
  {
    name: 'host-release',
    purpose: "a release's signed manifest for a host, with a download of its executable",
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/hosts/{node}/releases/{version}/{arch}',
      auth: 'host',
      request: { path: hostReleasePath },
    },
    access: ['nodeKeys:verify', 'proofs:write', 'inventory:read', 'releases:read'],
    handler: hostReleaseHandler,
  },
] as const satisfies readonly FunctionSpec[];
