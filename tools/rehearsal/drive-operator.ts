import { type DriveClients, DriveFailure, expectStatus } from './drive-clients.ts';

/**
 * The drive's steps for what an operator looks at and takes away (mesh-drive.ts runs them in its
 * `paths`): each needs the mesh the steps before it built — broker providing rabbitmq to app's
 * web, spare added, both hosts enrolled and pushed to, a message dead-lettered.
 */

/** Every read the console makes: the node list, one node, the graph, the pushes, one push, the dead letters. */
export async function seeTheMesh({ operator }: DriveClients): Promise<void> {
  const nodes = expectStatus(await operator.send('GET', '/nodes'), 200, 'GET /nodes').body as {
    nodes: Array<{ node: string }>;
  };
  if (!nodes.nodes.some((entry) => entry.node === 'app'))
    throw new DriveFailure(`the node list does not name app: ${JSON.stringify(nodes)}`);
  expectStatus(await operator.send('GET', '/nodes/app'), 200, 'GET /nodes/app');
  expectStatus(await operator.send('GET', '/graph'), 200, 'GET /graph');
  const pushes = expectStatus(await operator.send('GET', '/pushes?limit=5'), 200, 'GET /pushes').body as {
    pushes: Array<{ id: string }>;
  };
  const [latest] = pushes.pushes;
  if (!latest) throw new DriveFailure('no push was recorded');
  expectStatus(await operator.send('GET', `/pushes/${latest.id}`), 200, 'GET /pushes/{push}');
  expectStatus(await operator.send('GET', '/dead-letters?limit=5'), 200, 'GET /dead-letters');
}

/** app's host replaces its keys: the new key fetches, the replaced one is refused. */
export async function rotateAHostsKeys(mesh: DriveClients): Promise<void> {
  const replaced = await mesh.rotate('app');
  const path = '/hosts/app/declaration';
  expectStatus(await mesh.host('app').send('GET', path), 200, 'app fetches with its new key');
  expectStatus(
    await mesh.host('app', 'app', replaced).send('GET', path),
    401,
    'app fetches with its replaced key',
  );
}

/** A provision rotated, a relation withdrawn, a module unassigned, a node removed, a host disenrolled; one push. */
export async function takeAway({ operator }: DriveClients): Promise<void> {
  const relation = '/nodes/app/modules/web/consumes/broker/rabbitmq';
  expectStatus(await operator.send('POST', `${relation}/rotate`, {}), 200, 'rotate the provision');
  expectStatus(await operator.send('DELETE', relation), 200, 'unconsume');
  expectStatus(await operator.send('PUT', '/nodes/spare/modules/cron', {}), 201, 'assign spare cron');
  expectStatus(await operator.send('DELETE', '/nodes/spare/modules/cron'), 200, 'unassign spare cron');
  expectStatus(await operator.send('DELETE', '/nodes/spare'), 200, 'remove spare');
  expectStatus(await operator.send('DELETE', '/nodes/broker/enrolment'), 200, 'disenrol broker');
  expectStatus(await operator.send('POST', '/push', { behind: true }), 200, 'push --behind');
}
