/**
 * Identity table items (pk/sk), owned by enrolment:
 *
 * | pk            | sk                 | what it holds |
 * |---------------|--------------------|---------------|
 * | `node#<name>` | `key#<thumbprint>` | one presenter's public keys: `signingKey` (Ed25519 JWK, the host's proof key), `sealingKey` (X25519 JWK, enrolled for secrets to be sealed to the node; none are yet), `thumbprint`, `presenter`, `storedAt`, `tokenId` (the token they were presented with) |
 *
 * A key item is written (overwritten) by the claimant before the spend; it is a credential only
 * while the inventory's enrolment item (written by the spend) names its thumbprint. After the
 * spend the node's other key items put for that token or the ones it replaced are pruned (one
 * conditional DeleteItem each, on `tokenId`), so the table holds the winner's keys, and a key
 * put for a newer token is never removed by an older enrolment's late prune.
 * Access: GetItem by (node, thumbprint) on every host request (batched with the enrolment item);
 * Query by pk on enrolment to prune.
 */
export const identityPartition = (node: string) => `node#${node}`;
export const identityKeyItemKey = (node: string, thumbprint: string) =>
  ({ pk: identityPartition(node), sk: `key#${thumbprint}` }) as const;
