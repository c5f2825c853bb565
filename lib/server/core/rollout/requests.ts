import * as z from 'zod';
import { labelValue } from '../mesh/labels.ts';
import { nodeName } from '../names.ts';
import { RolloutUsageError } from './errors.ts';
import { maxRolloutNodes, type RolloutOrigin } from './record.ts';
import { type RolloutOptions, rolloutOptions } from './waves.ts';

/** What a rollout is cut and bounded by, as a request or an upgrade's message carries it (read by waves.ts). */
export const waveFields = {
  waves: z.string().min(1).max(200),
  maxFailures: z.string().min(1).max(20).optional(),
  waveTimeout: z.string().min(1).max(20).optional(),
  pause: z.boolean().optional(),
  autoUndo: z.boolean().optional(),
};
export const waveRequest = z.strictObject(waveFields);
export type WaveRequest = z.infer<typeof waveRequest>;

/**
 * `POST /rollouts`: a push sent in waves. Exactly one of a node (`mesh push NODE`), `behind`
 * (`--behind`), `on` with the nodes the selector picked (`--on`, resolved by the caller as
 * `mesh push --on` resolves it), or `agent`: an agent version set on the nodes given, a wave at a
 * time (`mesh agent upgrade VERSION`, every node of the mesh).
 */
export const rolloutRequest = z
  .strictObject({
    node: nodeName.optional(),
    behind: z.literal(true).optional(),
    on: z.string().min(1).max(500).optional(),
    agent: labelValue.optional(),
    nodes: z.array(nodeName).min(1).max(maxRolloutNodes).optional(),
    ...waveFields,
  })
  .refine((r) => [r.node, r.behind, r.on, r.agent].filter((x) => x !== undefined).length === 1, {
    message:
      'name a node, or ask for behind: true, on: SELECTOR with its nodes, or agent: VERSION with its nodes',
  })
  .refine((r) => (r.on === undefined && r.agent === undefined) === (r.nodes === undefined), {
    message: 'on and agent each go with nodes, and nodes with one of them',
  });
export type RolloutRequest = z.infer<typeof rolloutRequest>;

export function originOf(request: RolloutRequest): RolloutOrigin {
  if (request.node !== undefined) return { kind: 'push', node: request.node };
  if (request.on !== undefined) return { kind: 'on', selector: request.on };
  if (request.agent !== undefined) return { kind: 'agent', version: request.agent };
  return { kind: 'behind' };
}

/** The options a request asks for; RolloutUsageError (400) when they cannot be read. */
export const optionsOf = (request: WaveRequest): RolloutOptions => rolloutOptions(request);

/**
 * `--auto-undo` takes back an upgrade's version (a module's, or the agent's, each host to the one
 * it ran before); a push in waves sends what the mesh declares, which only the operator can
 * change back.
 */
export function checkAutoUndo(options: RolloutOptions, origin: RolloutOrigin): void {
  if (options.autoUndo && origin.kind !== 'upgrade' && origin.kind !== 'agent')
    throw new RolloutUsageError(
      "--auto-undo takes back an upgrade's version (mesh upgrade MODULE VERSION --waves … --auto-undo, mesh agent upgrade VERSION --waves … --auto-undo); a push in waves sends what the mesh declares: change the mesh back to take it back",
    );
}
