import { type DriveClients, DriveFailure } from './drive-clients.ts';
import type { IotConnection } from './iot-core.ts';
import type { RehearsalLedger } from './ledger.ts';
import type { RunningRehearsal } from './rehearsal.ts';

/**
 * The drive's steps for the change signal on IoT Core: hosts connect through the template's
 * custom authorizer with the proofs `mesh-host` makes, presence comes through the lifecycle
 * rule, and a push's signal is published (by the flow's functions, checked against their
 * roles) on the node's own topic.
 */

/** `node`'s host connects as `mesh-host run` does: its channel's username, client id `node`, a fresh proof. */
async function connectAs(
  mesh: DriveClients,
  { iot }: RunningRehearsal,
  node: string,
): Promise<IotConnection> {
  const outcome = await iot.connect({
    clientId: node,
    username: mesh.channelOf(node).username,
    password: await mesh.connectPassword(node),
  });
  if (!outcome.connected)
    throw new DriveFailure(`${node}'s host could not connect to IoT: ${outcome.reason}`);
  return outcome.connection;
}

/** What the policy an enrolled host is answered must allow (true) and must not (false). */
const policyExpectations = (node: string, other: string): Array<[string, string, boolean]> => [
  ['iot:Subscribe', `topicfilter/mesh/nodes/${node}/signal`, true],
  ['iot:Receive', `topic/mesh/nodes/${node}/signal`, true],
  ['iot:Subscribe', `topicfilter/mesh/nodes/${other}/signal`, false],
  ['iot:Receive', `topic/mesh/nodes/${other}/signal`, false],
  ['iot:Subscribe', 'topicfilter/#', false],
  ['iot:Connect', `client/${other}`, false],
  ['iot:Publish', `topic/mesh/nodes/${node}/signal`, false],
];

export async function connectsThroughTheAuthorizer(mesh: DriveClients, rehearsal: RunningRehearsal) {
  const connection = await connectAs(mesh, rehearsal, 'app');
  try {
    for (const [action, resource, expected] of policyExpectations('app', 'broker'))
      if ((await connection.allows(action, resource)) !== expected)
        throw new DriveFailure(
          `app's policy ${expected ? 'does not allow' : 'allows'} ${action} on ${resource}`,
        );
  } finally {
    connection.disconnect();
  }
  const { username } = mesh.channelOf('app');
  const password = await mesh.connectPassword('app');
  const first = await rehearsal.iot.connect({ clientId: 'app', username, password });
  if (!first.connected) throw new DriveFailure(`a fresh proof of app was refused: ${first.reason}`);
  first.connection.disconnect();
  const replayed = await rehearsal.iot.connect({ clientId: 'app', username, password });
  if (replayed.connected) throw new DriveFailure('a replayed connect proof of app was let in');
  const foreign = await rehearsal.iot.connect({
    clientId: 'app',
    username,
    password: await mesh.connectPassword('app', 'broker'),
  });
  if (foreign.connected) throw new DriveFailure('broker’s key was let in as app');
}

export async function presenceThroughTheLifecycleRule(mesh: DriveClients, rehearsal: RunningRehearsal) {
  const connection = await connectAs(mesh, rehearsal, 'broker');
  try {
    await mesh.waitFor('broker online in mesh status', async () =>
      (await mesh.online('broker')) === true ? true : undefined,
    );
  } finally {
    connection.disconnect();
  }
  await mesh.waitFor('broker offline in mesh status', async () =>
    (await mesh.online('broker')) === false ? true : undefined,
  );
}

/** Who published on a topic, by the functions' paths in the app. */
const publishersOf = (rehearsal: RunningRehearsal, topic: string) =>
  new Set(rehearsal.iot.published.filter((message) => message.topic === topic).map((m) => m.publisher));

const calledPublish = (ledger: RehearsalLedger, fn: string) =>
  (ledger.calls.get(fn)?.get('iot:Publish') ?? 0) > 0 &&
  (ledger.calls.get(fn)?.get('iot:RetainPublish') ?? 0) > 0;

export async function signalReachesTheHost(mesh: DriveClients, rehearsal: RunningRehearsal) {
  for (const node of ['app', 'broker'])
    if (publishersOf(rehearsal, mesh.channelOf(node).topic).size === 0)
      throw new DriveFailure(`no signal was published on ${mesh.channelOf(node).topic}`);
  const publishers = rehearsal.functions.filter((fn) => calledPublish(rehearsal.ledger, fn.displayName));
  if (publishers.length === 0) throw new DriveFailure('no function called iot:Publish with RETAIN');
  const { revision } = await mesh.declarationOf('app');
  const connection = await connectAs(mesh, rehearsal, 'app');
  try {
    const { topic } = mesh.channelOf('app');
    if (!(await connection.subscribe(topic)))
      throw new DriveFailure(`app's subscription to ${topic} was refused`);
    await rehearsal.iot.settled();
    const signals = connection.received.map((message) => JSON.parse(message.payload.toString('utf8')));
    if (!signals.some((signal) => signal.revision === revision))
      throw new DriveFailure(
        `app's host did not receive the retained signal of revision ${revision}: ${JSON.stringify(signals)}`,
      );
  } finally {
    connection.disconnect();
  }
}
