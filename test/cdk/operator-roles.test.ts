import { beforeAll, describe, expect, it } from 'vitest';
import { mayCall, type OperatorRole, operatorRoles, rolePolicyNames } from '../../lib/server/core/roles.ts';
import { arnPathOf, routesOfRole } from '../../lib/server/functions/roles.ts';
import { type Route, routes } from '../../lib/server/functions/table.ts';
import {
  type Assembly,
  type CfnTemplate,
  displayName,
  readAssembly,
  resourcesOfType,
} from '../../tools/rehearsal/assembly.ts';
import type { PolicyDocument } from '../../tools/rehearsal/iam-policies.ts';
import { type JudgedStack, stackOf } from '../../tools/rehearsal/stack.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';

/**
 * The operator roles (lib/deploy/operator-roles.ts) in the synthesized app (the run's one
 * synthesis of the template, without bundles: tools/rehearsal/synth.ts), judged by IAM's
 * evaluator as the rehearsal judges the functions' roles (tools/rehearsal/iam-check.ts): a
 * principal holding one policy calls every route of the route table, each path parameter given a
 * value, and is allowed exactly the routes its role may call.
 */
let assembly: Assembly;

beforeAll(async () => {
  assembly = readAssembly((await cachedSynth({ bundles: false })).cdkOut);
}, 300_000);

/** Each role's managed policy of a template, resolved to the rehearsal's ARNs. */
function policiesOf(stack: JudgedStack): Record<OperatorRole, PolicyDocument> {
  const template = stack.assembly.template;
  const found = resourcesOfType(template, 'AWS::IAM::ManagedPolicy');
  return Object.fromEntries(
    operatorRoles.map((role) => {
      const entry = found.find(([id]) => displayName(template, id) === `Roles/${rolePolicyNames[role]}`);
      if (!entry) throw new Error(`the template has no ${rolePolicyNames[role]}`);
      const [id, resource] = entry;
      return [role, stack.references.resolve(resource.Properties?.PolicyDocument, id) as PolicyDocument];
    }),
  ) as Record<OperatorRole, PolicyDocument>;
}

/** Where a route's requests go in execute-api ARNs: `…:<api id>/<stage>/<METHOD>` then the path. */
function methodArn(stack: JudgedStack, route: Pick<Route, 'method'>): string {
  const template = stack.assembly.template;
  const [apiId] = resourcesOfType(template, 'AWS::ApiGateway::RestApi')[0] ?? [];
  const [, stage] = resourcesOfType(template, 'AWS::ApiGateway::Stage')[0] ?? [];
  const { partition, region, account } = stack.references.environment;
  const api = stack.references.resolveString({ Ref: apiId }, 'the API');
  return `arn:${partition}:execute-api:${region}:${account}:${api}/${stage?.Properties?.StageName}/${route.method}`;
}

/** A request of the route: each path parameter a name such a parameter could hold. */
const requestArn = (stack: JudgedStack, route: Route) =>
  `${methodArn(stack, route)}${route.path.replace(/\{\w+\}/g, 'alpha')}`;

const principal = (stack: JudgedStack, role: OperatorRole) =>
  `arn:aws:sts::${stack.references.environment.account}:assumed-role/${rolePolicyNames[role]}Holder/operator`;

async function allows(stack: JudgedStack, document: PolicyDocument, role: OperatorRole, route: Route) {
  const decision = await stack.iam.judge([document], principal(stack, role), {
    action: 'execute-api:Invoke',
    resource: requestArn(stack, route),
  });
  return decision.allowed;
}

/** Every route a role's policy allows and may not, and every route it may and is refused. */
async function misjudged(stack: JudgedStack): Promise<string[]> {
  const policies = policiesOf(stack);
  const lines: string[] = [];
  for (const role of operatorRoles) {
    for (const route of routes) {
      const may = route.auth === 'operator' && route.role !== undefined && mayCall(role, route.role);
      const allowed = await allows(stack, policies[role], role, route);
      if (allowed !== may)
        lines.push(
          `${rolePolicyNames[role]} ${allowed ? 'allows' : 'refuses'} ${route.method} ${route.path}, which ${route.role ? `needs ${rolePolicyNames[route.role]}` : `is a ${route.auth} route`}`,
        );
    }
  }
  return lines;
}

const tokenRoute = routes.find((route) => route.handler === 'token-issue') as Route;
const pushRoute = routes.find((route) => route.handler === 'mesh-push') as Route;
const applyRoute = routes.find((route) => route.handler === 'mesh-apply') as Route;
const pruneRoute = routes.find((route) => route.handler === 'mesh-apply-prune') as Route;
const removeRoute = routes.find((route) => route.handler === 'mesh-node-remove') as Route;

describe('the operator roles, judged by IAM’s evaluator', () => {
  it('lists in each policy exactly the ARNs of its role’s routes, one method and path each', () => {
    const stack = stackOf(assembly);
    const policies = policiesOf(stack);
    for (const role of operatorRoles) {
      const [statement, ...others] = policies[role].Statement;
      expect(others).toEqual([]);
      expect(statement).toMatchObject({ Effect: 'Allow', Action: 'execute-api:Invoke' });
      // IAM's bound on a managed policy's document (6,144 characters without whitespace), with
      // an account and API id as long as AWS's: the largest role has room for the rows to come.
      expect(JSON.stringify(policies[role]).length).toBeLessThan(6_144 * 0.75);
      expect([statement?.Resource].flat().sort()).toEqual(
        routesOfRole(routes, role)
          .map((route) => `${methodArn(stack, route)}${arnPathOf(route.path)}`)
          .sort(),
      );
    }
  });

  it('refuses a viewer’s POST /push and an operator’s POST /nodes/{node}/token, and allows an admin both', async () => {
    const stack = stackOf(assembly);
    const { viewer, operator, admin } = policiesOf(stack);
    expect(await allows(stack, viewer, 'viewer', pushRoute)).toBe(false);
    expect(await allows(stack, operator, 'operator', tokenRoute)).toBe(false);
    expect(await allows(stack, operator, 'operator', pushRoute)).toBe(true);
    expect(await allows(stack, admin, 'admin', pushRoute)).toBe(true);
    expect(await allows(stack, admin, 'admin', tokenRoute)).toBe(true);
  });

  it('refuses an operator a prune, which removes nodes as DELETE /nodes/{node} does, and allows an admin (issue 36, finding 2)', async () => {
    const stack = stackOf(assembly);
    const { operator, admin } = policiesOf(stack);
    expect({
      operatorApplies: await allows(stack, operator, 'operator', applyRoute),
      operatorPrunes: await allows(stack, operator, 'operator', pruneRoute),
      operatorRemoves: await allows(stack, operator, 'operator', removeRoute),
      adminPrunes: await allows(stack, admin, 'admin', pruneRoute),
      adminRemoves: await allows(stack, admin, 'admin', removeRoute),
    }).toEqual({
      operatorApplies: true,
      operatorPrunes: false,
      operatorRemoves: false,
      adminPrunes: true,
      adminRemoves: true,
    });
    expect(pruneRoute).toMatchObject({ method: 'POST', path: '/mesh/apply/prune', role: 'admin' });
  });

  it('lets each role reach every route its rows name, and no route of a higher role, host or token route', async () => {
    expect(await misjudged(stackOf(assembly))).toEqual([]);
  });

  it('names each route a policy widened to * lets a lower role reach', async () => {
    const widened = structuredClone(assembly.template) as CfnTemplate;
    const [, viewer] =
      resourcesOfType(widened, 'AWS::IAM::ManagedPolicy').find(
        ([id]) => displayName(widened, id) === 'Roles/MeshViewer',
      ) ?? [];
    const document = viewer?.Properties?.PolicyDocument as { Statement: Array<{ Resource: unknown }> };
    (document.Statement[0] as { Resource: unknown }).Resource = '*';

    const lines = await misjudged(stackOf({ ...assembly, template: widened }));
    expect(lines).toEqual(
      expect.arrayContaining([
        'MeshViewer allows POST /push, which needs MeshOperator',
        'MeshViewer allows POST /nodes/{node}/token, which needs MeshAdmin',
        'MeshViewer allows POST /hosts/{node}/reports, which is a host route',
      ]),
    );
    expect(lines.every((line) => line.startsWith('MeshViewer allows'))).toBe(true);
  });
});
