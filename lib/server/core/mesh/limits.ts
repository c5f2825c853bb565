/**
 * How large one node's declaration may grow. The counts are refused where they grow (assign,
 * consume) and the size is checked where it is composed (the push).
 *
 * A declaration up to 350 KB is kept in its delivery item; a larger one in parts of 350 KB
 * beside it (lib/server/adapters/dynamodb/declaration-parts.ts), written outside the send's
 * transaction, so DynamoDB's 400 KB item and 100 items / 4 MB transaction bound neither. What
 * bounds it is its one answer to the host: `GET /hosts/{node}/declaration` returns it whole, in
 * one Lambda response of at most 6 MB, where the body is a JSON string whose quotes are escaped
 * (10,000 grants with short names answer 1.18 times their bytes, with the longest 1.05):
 * 4,000,000 bytes leaves over a megabyte for that and the answer's other fields.
 *
 * 10,000 consumers (grants) with names of about 30 characters make 2.3 MB (233 bytes a grant),
 * inside the bound with 200 provisions and 100 modules beside them; with the longest names
 * (63-character nodes and modules) a grant is 574 bytes, and the size bound refuses a provider
 * near 7,000 of them: the counts say how many, the size bound catches what counts cannot.
 */
export const meshLimits = {
  /** Modules assigned to one node. */
  modulesPerNode: 100,
  /** Relations a node's modules consume through: its provisions. */
  consumesPerNode: 200,
  /** Relations other modules consume a node's providers through: its grants (a broker for a fleet of 10,000). */
  consumersPerNode: 10_000,
  /** The declaration's canonical JSON, in bytes. */
  declarationBytes: 4_000_000,
} as const;

export type MeshLimit = Exclude<keyof typeof meshLimits, 'declarationBytes'>;
