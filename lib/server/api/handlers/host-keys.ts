import type { ControlSender } from '../../core/control/ports.ts';
import type { KeyRotationStore, NodeKeyStore } from '../../core/enrolment/ports.ts';
import { rotateNodeKeys, rotationBody } from '../../core/enrolment/rotation.ts';
import { actorOf } from '../caller.ts';
import { enrolmentProblem } from '../enrolment-problems.ts';
import { authenticatedHost } from '../host-auth.ts';
import { json, parseBody } from '../http.ts';
import { keysChanged } from './enrolment.ts';
import { type Proven, provenRoute } from './host.ts';

/** What `POST /hosts/{node}/keys` answers: the node's key now, and the one it replaced. */
export type RotationAnswer = {
  readonly node: string;
  readonly thumbprint: string;
  readonly previous: string;
  readonly rotatedAt: string;
};

/**
 * `POST /hosts/{node}/keys`: the node replaces its keys, proven by the key it has (the request's
 * proof) and by the new one (the body's possession proof). See lib/server/core/enrolment/rotation.ts.
 */
export const hostKeysHandler = (
  deps: {
    readonly nodeKeys: NodeKeyStore;
    readonly keyRotation: KeyRotationStore;
    /** Where the rotation is told, so the node's relations are minted again to its new key. */
    readonly sender: ControlSender;
  } & Proven,
) =>
  provenRoute(deps, 'proof-id', enrolmentProblem).handler(async function rotateKeys(event) {
    const host = authenticatedHost(event);
    const body = parseBody(event, rotationBody);
    const rotated = await rotateNodeKeys(
      {
        node: host.node,
        previous: host.thumbprint,
        keys: body.keys,
        possession: body.possession,
        by: actorOf(event),
      },
      { keys: deps.nodeKeys, rotation: deps.keyRotation, ...(deps.now ? { now: deps.now } : {}) },
    );
    await keysChanged(deps.sender, rotated.node);
    const answer: RotationAnswer = {
      node: rotated.node,
      thumbprint: rotated.thumbprint,
      previous: rotated.previous,
      rotatedAt: rotated.rotatedAt,
    };
    return json(200, answer);
  });
