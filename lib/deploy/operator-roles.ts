import { type CfnElement, Stack, Token } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import { ManagedPolicy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { type OperatorRole, operatorRoles, rolePolicyNames } from '../server/core/roles.ts';
import { arnPathOf, roleProblems, routesOfRole, wildcardProblems } from '../server/functions/roles.ts';
import type { Route } from '../server/functions/table.ts';
import { acknowledge } from './nag.ts';
import { throwIfProblems } from './names.ts';

export type OperatorRolesProps = {
  /** The control plane's API; each policy names its methods on the API's deployment stage. */
  readonly api: RestApi;
  /** That stage's name. */
  readonly stageName: string;
  /** The route table (lib/server/functions/table.ts): each operator route names the role that may call it. */
  readonly routes: readonly Route[];
};

const described: Readonly<Record<OperatorRole, string>> = {
  viewer: 'Mesh: every read of the control plane and the console',
  operator: 'Mesh: MeshViewer, and changes, pushes, applies, upgrades and rollouts',
  admin: 'Mesh: MeshOperator, and tokens, disenrolment, node removal, report resets and build retractions',
};

/**
 * The operators' roles as IAM managed policies, MeshViewer, MeshOperator and MeshAdmin, built
 * from the route table. Policy fixed here:
 * - each allows `execute-api:Invoke` on exactly the methods of its routes, one ARN per method
 *   and path, a path parameter a `*`;
 * - each lists its own routes and those of the roles before it, so one policy is a whole role:
 *   attaching the one a principal needs is enough, and no policy denies anything, so a principal
 *   given two holds the union, never less;
 * - a `*` in an execute-api ARN also matches the segments after it, so the routes are refused
 *   when one role's ARN would reach a route of a higher role with the same method (IAM cannot say
 *   "one segment": such a route needs a path of its own), and when an operator route names no
 *   role.
 */
export class OperatorRoles extends Construct {
  public readonly policies: Readonly<Record<OperatorRole, ManagedPolicy>>;

  constructor(scope: Construct, id: string, props: OperatorRolesProps) {
    super(scope, id);
    throwIfProblems('OperatorRoles', [...roleProblems(props.routes), ...wildcardProblems(props.routes)]);
    const stage = props.stageName;
    const stack = Stack.of(this);
    const apiId = stack.resolve((props.api.node.defaultChild as CfnElement).logicalId);
    // How cdk-nag writes the ARN in a finding: a pseudo parameter as `<AWS::Region>`, unless the stack's is known.
    const known = (value: string, name: string) => (Token.isUnresolved(value) ? `<AWS::${name}>` : value);
    const arnInFinding = `arn:<AWS::Partition>:execute-api:${known(stack.region, 'Region')}:${known(stack.account, 'AccountId')}:<${apiId}>/${stage}`;
    const policies = {} as Record<OperatorRole, ManagedPolicy>;
    for (const role of operatorRoles) {
      const routes = routesOfRole(props.routes, role);
      const paths = routes.map((route) => ({ method: route.method, path: arnPathOf(route.path) }));
      const policy = new ManagedPolicy(this, rolePolicyNames[role], {
        description: described[role],
        statements: [
          new PolicyStatement({
            actions: ['execute-api:Invoke'],
            resources: paths.map(({ method, path }) => props.api.arnForExecuteApi(method, path, stage)),
          }),
        ],
      });
      acknowledge(
        policy,
        ...paths
          .filter(({ path }) => path.includes('*'))
          .map(({ method, path }) => ({
            id: `AwsSolutions-IAM5[Resource::${arnInFinding}/${method}${path}]`,
            reason: `${method} ${path}: each * is a path parameter of a route ${rolePolicyNames[role]} may call; the routes are checked so that no * reaches a route of a higher role`,
          })),
      );
      policies[role] = policy;
    }
    this.policies = policies;
  }
}
