import type { TokenView } from '../enrolment/token-state.ts';
import type { NodeStatus } from './ports.ts';

/**
 * The read models an operator looks at (`mesh node list|show`, `mesh graph`, the console): the
 * mesh area's nodes and relations joined with what enrolment and the control queue keep about
 * each node. Read-only; lib/server/adapters/views/mesh-view-reader.ts builds them.
 */
export type ModuleView = {
  readonly module: string;
  readonly version: string | null;
  readonly provides: string | null;
};

export type RelationEnd = { readonly node: string; readonly module: string };

/** A consumer → provider relation; `minted` once the consumer's node was pushed since (its provision exists). */
export type MeshEdge = {
  readonly consumer: RelationEnd;
  readonly provider: RelationEnd;
  readonly kind: string;
  readonly minted: boolean;
};

/** From the node's status: unknown until its host first connects to the signal. */
export type Presence = 'online' | 'offline' | null;

export type MeshNode = NodeStatus & {
  readonly modules: readonly ModuleView[];
  readonly presence: Presence;
};

export type MeshGraph = { readonly nodes: readonly MeshNode[]; readonly edges: readonly MeshEdge[] };

export type NodeDetails = MeshNode & {
  /** The node's labels (docs/mesh-file.md), by key. */
  readonly labels: Readonly<Record<string, string>>;
  readonly createdAt: string | null;
  /** When the node was last marked behind; null when it is not behind. */
  readonly markedAt: string | null;
  /** The RFC 7638 thumbprint of the enrolled signing key. */
  readonly thumbprint: string | null;
  readonly sentDigest: string | null;
  readonly report: {
    readonly state: string | null;
    readonly revision: number | null;
    readonly step: string | null;
    readonly sequence: number | null;
    readonly heardAt: string | null;
    /** The modules (to their versions) the last `applied` report named; null when it named none. */
    readonly appliedModules: Readonly<Record<string, string | null>> | null;
    /** The modules the latest report named, while it is `failed`. */
    readonly failedModules: Readonly<Record<string, string | null>> | null;
  } | null;
  readonly token: TokenView | null;
  /**
   * The ends of the apply command's stderr and of the check's output its host last reported
   * (secrets redacted by the host, 4 KiB in all); null when it reported none.
   */
  readonly output: { readonly apply: string | null; readonly check: string | null } | null;
  /** What its modules consume, and who consumes from its modules. */
  readonly consumes: readonly MeshEdge[];
  readonly consumedBy: readonly MeshEdge[];
  /**
   * The declaration as last sent, every secret hidden; null before the first push, and when it
   * was too large for one item and is kept in parts (`declarationParts`): the answer stays
   * small, and `GET /nodes/{node}/declaration` serves it whole.
   */
  readonly declaration: unknown;
  /** How many parts the declaration last sent is kept in; null when it is in its delivery item. */
  readonly declarationParts: number | null;
};

/** A node as `mesh node list` shows it: with how many relations it has each way. */
export type ListedNode = MeshNode & {
  readonly relations: { readonly consumes: number; readonly consumedBy: number };
};

export function listedNodes(graph: MeshGraph): ListedNode[] {
  const count = (side: 'consumer' | 'provider', node: string) =>
    graph.edges.filter((edge) => edge[side].node === node).length;
  return graph.nodes.map((node) => ({
    ...node,
    relations: { consumes: count('consumer', node.node), consumedBy: count('provider', node.node) },
  }));
}

export function presenceOf(status: NodeStatus): Presence {
  if (status.online === null) return null;
  return status.online ? 'online' : 'offline';
}

export const hiddenSecret = '(hidden)';
const secretName = /secret|password|passphrase|token|private|credential/i;

/** Whether a member's name says it holds a secret: what views hide, and what a host redacts from its outputs. */
export const isSecretName = (name: string) => secretName.test(name);

/**
 * The value with every member whose name says it holds a secret replaced by `(hidden)`, at any
 * depth, so a field added to the declaration later is hidden too when it is named like one.
 */
export function hideSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hideSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, member]) => [
      name,
      secretName.test(name) && member !== null ? hiddenSecret : hideSecrets(member),
    ]),
  );
}
