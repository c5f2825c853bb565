import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { makeSQSClient } from '../../lib/adapters/aws-clients.ts';
import { DriveClients, DriveFailure, type DriveStep, expectStatus } from './drive-clients.ts';
import { refuseAndResetAReport, retractABuild } from './drive-corrections.ts';
import { rotateAHostsKeys, seeTheMesh, takeAway } from './drive-operator.ts';
import type { RunningRehearsal } from './rehearsal.ts';
import {
  connectsThroughTheAuthorizer,
  presenceThroughTheLifecycleRule,
  signalReachesTheHost,
} from './signal-drive.ts';

export type { DriveStep } from './drive-clients.ts';

type Path = readonly [name: string, run: (mesh: DriveClients, rehearsal: RunningRehearsal) => Promise<void>];

/** The dead-letter queue of the queue a mapping reads, by the queue's RedrivePolicy in the template. */
function deadLetterUrlOf(rehearsal: RunningRehearsal, queueArn: string): string {
  const { references } = rehearsal;
  const queueId = references.logicalIdFor(queueArn) as string;
  const properties = references.template.Resources[queueId]?.Properties;
  const redrive = references.resolve(properties?.RedrivePolicy, queueId) as
    | { deadLetterTargetArn?: string }
    | undefined;
  const deadLetterId = references.logicalIdFor(redrive?.deadLetterTargetArn ?? '');
  if (!deadLetterId) throw new DriveFailure(`the queue ${queueArn} has no dead-letter queue`);
  return references.identity(deadLetterId)?.ref as string;
}

/** Mesh's paths, in order; each needs what the ones before it made. */
const paths: readonly Path[] = [
  [
    'health answers without authentication',
    async (mesh) => void expectStatus(await mesh.anonymous.send('GET', '/health'), 200, 'GET /health'),
  ],
  [
    'an operator route refuses an unsigned request',
    async (mesh) =>
      void expectStatus(await mesh.anonymous.send('GET', '/status'), 403, 'unsigned GET /status'),
  ],
  [
    'the operator builds the mesh: nodes, modules, a consumer of a provider',
    async ({ operator }) => {
      for (const node of ['broker', 'app', 'spare'])
        expectStatus(await operator.send('POST', '/nodes', { node }), 201, `POST /nodes ${node}`);
      const provider = { node: 'broker', module: 'rabbitmq' };
      expectStatus(
        await operator.send('PUT', '/nodes/broker/modules/rabbitmq', { provides: 'amqp' }),
        201,
        'assign broker',
      );
      expectStatus(await operator.send('PUT', '/nodes/app/modules/web', {}), 201, 'assign app');
      expectStatus(
        await operator.send('POST', '/nodes/app/modules/web/consumes', { provider }),
        201,
        'consume',
      );
    },
  ],
  [
    'a token is issued and revoked; hosts enrol with theirs',
    async (mesh) => {
      expectStatus(await mesh.operator.send('POST', '/nodes/spare/token', { ttl: '1h' }), 201, 'issue spare');
      expectStatus(await mesh.operator.send('DELETE', '/nodes/spare/token'), 200, 'revoke spare');
      await mesh.enrol('broker');
      await mesh.enrol('app');
    },
  ],
  [
    'host routes refuse a missing proof and another node’s proof',
    async (mesh) => {
      expectStatus(await mesh.anonymous.send('GET', '/hosts/app/declaration'), 401, 'no proof');
      expectStatus(
        await mesh.host('app', 'broker').send('GET', '/hosts/app/declaration'),
        403,
        'broker’s proof for app',
      );
    },
  ],
  [
    'the broker’s authorizer lets a host connect for its own topics only; a replayed or another node’s proof is refused',
    connectsThroughTheAuthorizer,
  ],
  [
    'a host’s connect and disconnect reach mesh status through the lifecycle rule (online, then offline)',
    presenceThroughTheLifecycleRule,
  ],
  [
    'a push plan names what a push would send, and sends nothing',
    async ({ operator }) => {
      const plan = expectStatus(
        await operator.send('POST', '/push/plan', { node: 'app' }),
        200,
        'POST /push/plan',
      ).body as { flushed: Array<{ node: string }> };
      if (!plan.flushed.some((entry) => entry.node === 'broker'))
        throw new DriveFailure(`the plan does not name broker: ${JSON.stringify(plan)}`);
    },
  ],
  [
    'a push of the consumer’s node flushes the provider (one push leaves the mesh consistent)',
    async ({ operator }) => {
      const outcome = expectStatus(await operator.send('POST', '/push', { node: 'app' }), 200, 'POST /push')
        .body as { flushed: Array<{ node: string }>; behind: string[] };
      if (!outcome.flushed.some((entry) => entry.node === 'broker') || outcome.behind.length > 0)
        throw new DriveFailure(`the push did not flush broker: ${JSON.stringify(outcome)}`);
    },
  ],
  [
    'the push published each node’s signal on its own topic, retained; the host receives it on subscribing',
    signalReachesTheHost,
  ],
  [
    'hosts fetch what they were sent; a report is recorded through the queue',
    async (mesh) => {
      for (const node of ['broker', 'app'])
        expectStatus(await mesh.host(node).send('GET', `/hosts/${node}/declaration`), 200, `${node} fetches`);
      const { revision } = await mesh.declarationOf('app');
      await mesh.reportApplied('app', revision);
      await mesh.waitFor('app’s report to be recorded', async () =>
        (await mesh.appliedRevision('app')) === revision ? true : undefined,
      );
    },
  ],
  [
    'a report is held while the store is away for the queue’s consumer, and recorded when it is back',
    async (mesh, rehearsal) => {
      const { ledger, endpoint } = rehearsal;
      const consumers = rehearsal.mappings.map((mapping) => mapping.fn);
      const holds = () =>
        consumers.reduce(
          (sum, fn) => sum + (ledger.calls.get(fn.displayName)?.get('sqs:ChangeMessageVisibility') ?? 0),
          0,
        );
      const before = holds();
      const { revision } = await mesh.declarationOf('broker');
      const restore = endpoint.interrupt(
        'dynamodb',
        consumers.map((fn) => fn.logicalId),
      );
      try {
        await mesh.reportApplied('broker', revision);
        await mesh.waitFor('the consumer to hold the report (a visibility change)', async () =>
          holds() > before ? true : undefined,
        );
      } finally {
        restore();
      }
      await mesh.waitFor(
        'the held report to be recorded',
        async () => ((await mesh.appliedRevision('broker')) === revision ? true : undefined),
        40_000,
      );
    },
  ],
  [
    'a build, catch-up and an upgrade reach the declarations through the push flow',
    async (mesh) => {
      const { operator } = mesh;
      expectStatus(
        await operator.send('POST', '/builds', { module: 'web', version: '2.0.0' }),
        202,
        'POST /builds',
      );
      expectStatus(await operator.send('POST', '/catch-up', {}), 202, 'POST /catch-up');
      await mesh.waitFor('web 2.0.0 in app’s declaration', async () =>
        (await mesh.versionOf('app', 'web')) === '2.0.0' ? true : undefined,
      );
      const upgrade = { module: 'rabbitmq', version: '3.13.0' };
      expectStatus(await operator.send('POST', '/upgrades', upgrade), 202, 'POST /upgrades');
      await mesh.waitFor('rabbitmq 3.13.0 in broker’s declaration', async () =>
        (await mesh.versionOf('broker', 'rabbitmq')) === '3.13.0' ? true : undefined,
      );
    },
  ],
  [
    'a report far ahead of the clock is refused; an operator resets a report and the next one is recorded',
    refuseAndResetAReport,
  ],
  ['a build retracted: catch-up announces the build before it again', retractABuild],
  [
    'a malformed message is dead-lettered at once',
    async (mesh, rehearsal) => {
      const [mapping] = rehearsal.mappings;
      if (!mapping) throw new DriveFailure('the stack has no queue event source');
      const deadLetterUrl = deadLetterUrlOf(rehearsal, mapping.queueArn);
      // put on the queue from outside the stack, as a broken sender would
      const sqs = makeSQSClient(rehearsal.environment, { endpoint: rehearsal.emulators.endpoints.sqs });
      try {
        const body = `not json ${Date.now()}`;
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: mapping.queueUrl,
            MessageBody: body,
            MessageGroupId: 'rehearsal',
          }),
        );
        await mesh.waitFor('the malformed message on the dead-letter queue', async () => {
          const received = await sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: deadLetterUrl,
              MaxNumberOfMessages: 10,
              WaitTimeSeconds: 1,
            }),
          );
          return received.Messages?.some((message) => message.Body === body) ? true : undefined;
        });
      } finally {
        sqs.destroy();
      }
    },
  ],
  [
    'the operator sees the mesh: its nodes, one node, the graph, the pushes, one push, the dead letters',
    seeTheMesh,
  ],
  ['a host rotates its keys: the new key works, the replaced one is refused', rotateAHostsKeys],
  [
    'taking away: a provision rotated, a relation withdrawn, a module unassigned, a node removed, a host disenrolled',
    takeAway,
  ],
  [
    'an audit (push --behind --full, and its plan) lists every node through the index and finds nothing behind',
    async ({ operator }) => {
      const audit = { behind: true, full: true };
      expectStatus(await operator.send('POST', '/push/plan', audit), 200, 'POST /push/plan --full');
      const outcome = expectStatus(await operator.send('POST', '/push', audit), 200, 'push --behind --full')
        .body as { behind: string[] };
      if (outcome.behind.length > 0)
        throw new DriveFailure(`the audit left ${outcome.behind.join(', ')} behind`);
    },
  ],
  [
    'every function of the template was invoked',
    async (_mesh, { functions, ledger }) => {
      const never = functions.filter((fn) => !ledger.invocations.get(fn.logicalId)?.invocations);
      if (never.length > 0)
        throw new DriveFailure(
          `never invoked, so not rehearsed: ${never.map((fn) => fn.displayName).join(', ')}`,
        );
    },
  ],
];

/**
 * Mesh's paths through the rehearsed stack, every function on its way: the mesh built and
 * pushed over the operator routes (SigV4), hosts enrolled with tokens and signing their own
 * requests through the host authorizer, reports through the queue into the store (one held
 * while the store is away for the queue's consumer), builds, catch-up and upgrades driving the
 * push flow from the consumer, and a malformed message dead-lettered. It stops at the first
 * step that does not hold.
 */
export async function driveMesh(
  rehearsal: RunningRehearsal,
  onStep: (step: DriveStep) => void = () => undefined,
): Promise<DriveStep[]> {
  const mesh = new DriveClients(rehearsal.url, rehearsal.environment.region, rehearsal.ledger);
  const steps: DriveStep[] = [];
  for (const [name, run] of paths) {
    const started = Date.now();
    let step: DriveStep;
    try {
      await run(mesh, rehearsal);
      step = { name, ok: true, ms: Date.now() - started };
    } catch (error) {
      step = { name, ok: false, ms: Date.now() - started, detail: (error as Error).message };
    }
    steps.push(step);
    onStep(step);
    if (!step.ok) break;
  }
  return steps;
}
