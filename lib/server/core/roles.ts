/**
 * The operator roles (docs/deploy.md#operator-roles): what every operator route names, what the
 * stack grants as IAM managed policies, and what the clients say a refusal needs. The rules over
 * the route table are in lib/server/functions/roles.ts.
 */
export type OperatorRole = 'viewer' | 'operator' | 'admin';

/** The operator roles, each allowed what the ones before it are. */
export const operatorRoles = ['viewer', 'operator', 'admin'] as const satisfies readonly OperatorRole[];

/** The IAM managed policy that grants each role (lib/deploy/operator-roles.ts). */
export const rolePolicyNames: Readonly<Record<OperatorRole, string>> = {
  viewer: 'MeshViewer',
  operator: 'MeshOperator',
  admin: 'MeshAdmin',
};

/** Whether a principal given `holder` may call a route that names `needed`. */
export const mayCall = (holder: OperatorRole, needed: OperatorRole): boolean =>
  operatorRoles.indexOf(holder) >= operatorRoles.indexOf(needed);
