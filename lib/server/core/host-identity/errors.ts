import { ErrorTable, refused } from '../error-table.ts';
import { proofScheme } from './proof.ts';

/**
 * Why a host request was not accepted as coming from the node it names. Every one of these is
 * a refusal of the request, not a fault of the control plane: the edge answers 401 (the proof
 * does not show who sent it) or 403 (it does, but that node may not act here).
 */
export class HostIdentityError extends Error {
  override name = 'HostIdentityError';
  /** Stable code shown to the host. */
  readonly code: string;
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
  }
}

/** No proof, or one that cannot be read (not a compact JWS, wrong header, missing claims). */
export class ProofMissingError extends HostIdentityError {
  override name = 'ProofMissingError';
}

/** The proof's signature does not verify against the node's enrolled key. */
export class ProofInvalidError extends HostIdentityError {
  override name = 'ProofInvalidError';
}

/** The proof signs a different request: another method, URL or body. */
export class ProofMismatchError extends HostIdentityError {
  override name = 'ProofMismatchError';
}

/** The proof was made too long ago, or too far in the future, for the allowed clock skew. */
export class ProofStaleError extends HostIdentityError {
  override name = 'ProofStaleError';
}

/** The proof's jti was seen before: a replay. */
export class ProofReplayedError extends HostIdentityError {
  override name = 'ProofReplayedError';
}

/** The node has no completed enrolment for the key the proof names (unknown, or not yet spent). */
export class NodeNotEnrolledError extends HostIdentityError {
  override name = 'NodeNotEnrolledError';
}

/** A valid proof by one node on a route about another node. */
export class WrongNodeError extends HostIdentityError {
  override name = 'WrongNodeError';
  readonly node: string;
  readonly target: string;
  constructor(node: string, target: string) {
    super('wrong_node', `node ${node} may only act as itself, not as ${target}`);
    this.node = node;
    this.target = target;
  }
}

/**
 * 401 when the proof does not show who sent the request, with `WWW-Authenticate` naming why;
 * 403 when it does, but that node may not act on this route.
 */
const unproven = {
  headers: (e: HostIdentityError) => ({ 'www-authenticate': `${proofScheme} error="${e.code}"` }),
};
const code = (e: HostIdentityError) => e.code;

export const hostIdentityErrors = new ErrorTable({
  HostIdentityError: refused(HostIdentityError, 401, code, unproven),
  ProofMissingError: refused(ProofMissingError, 401, code, unproven),
  ProofInvalidError: refused(ProofInvalidError, 401, code, unproven),
  ProofMismatchError: refused(ProofMismatchError, 401, code, unproven),
  ProofStaleError: refused(ProofStaleError, 401, code, unproven),
  ProofReplayedError: refused(ProofReplayedError, 401, code, unproven),
  NodeNotEnrolledError: refused(NodeNotEnrolledError, 401, code, unproven),
  WrongNodeError: refused(WrongNodeError, 403, code),
});
