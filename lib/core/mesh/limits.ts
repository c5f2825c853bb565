/**
 * How large one node's declaration may grow. A declaration is kept as one DynamoDB item (400 KB
 * at most, attribute names included) and read whole by its host, so the counts are refused where
 * they grow (assign, consume) and the size is checked where it is composed (the push). With the
 * longest names the counts allow about 320 KB; the size bound catches what counts cannot.
 */
export const meshLimits = {
  /** Modules assigned to one node. */
  modulesPerNode: 100,
  /** Relations a node's modules consume through: its provisions. */
  consumesPerNode: 200,
  /** Relations other modules consume a node's providers through: its grants. */
  consumersPerNode: 300,
  /** The declaration's canonical JSON, in bytes. */
  declarationBytes: 350_000,
} as const;

export type MeshLimit = Exclude<keyof typeof meshLimits, 'declarationBytes'>;
