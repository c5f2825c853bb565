import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { importJWK } from 'jose';
import { expect, it } from 'vitest';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient, scanAll } from '../lib/server/adapters/dynamodb/requests.ts';
import { openSealed, relationOf } from '../lib/server/core/sealing/sealed-secret.ts';
import {
  addAndEnrol,
  appliedAsSent,
  enrol,
  eventually,
  expectOk,
  inBed,
  lastApplied,
} from './support/bed.ts';

type Applied = {
  provisions: Array<{ secret: string; generation: string }>;
  grants: Array<{ secret: string; generation: string; resource: string }>;
};

/** Every file under `dir`, whole, as text. */
function filesUnder(dir: string): Array<{ path: string; text: string }> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({ path, text: readFileSync(path, 'latin1') }));
}

/**
 * Secrets only the two hosts can read (docs/decisions/sealed-secrets.md): a relation made before
 * its provider enrolled waits, named; the provider's enrolment mints it and delivers both sides
 * with no push typed; a key rotation on the provider is a new secret on both hosts that the old
 * key cannot open; and nothing the control plane holds, logs or answers contains a secret.
 */
it('a relation made before the provider enrolled is minted on both hosts when it enrols, and a key rotation re-mints it', () =>
  inBed('sealed-relations', async (bed) => {
    await bed.startControlPlane();
    await addAndEnrol(bed, 'app');
    await expectOk(bed.mesh('node', 'add', 'broker'), 'mesh node add broker');
    await expectOk(bed.mesh('assign', 'broker', 'rabbitmq', '--provides', 'amqp'), 'assign broker');
    await expectOk(bed.mesh('assign', 'app', 'web'), 'assign app');
    await expectOk(bed.mesh('consume', 'app/web', 'broker/rabbitmq'), 'consume');
    bed.startHost('app');
    await expectOk(bed.mesh('push', 'app'), 'mesh push app');
    await appliedAsSent(bed, ['app']);
    const waiting = await expectOk(bed.mesh('declaration', 'app'), 'mesh declaration app');
    expect(waiting.json).toMatchObject({
      declaration: { provisions: [], waiting: [{ module: 'web', waitingFor: ['broker'] }] },
    });

    await enrol(bed, 'broker');
    bed.startHost('broker');
    const vhost = join(bed.recordDir('broker'), 'vhosts', 'app_web');
    await eventually('the broker’s hook to mint the app’s vhost, with no push typed', () =>
      existsSync(vhost) ? true : undefined,
    );
    await eventually('the app’s hook to apply its provision', () =>
      lastApplied<Applied>(bed, 'app')?.provisions.length === 1 ? true : undefined,
    );
    await appliedAsSent(bed, ['broker', 'app']);
    const first = lastApplied<Applied>(bed, 'app')?.provisions[0];
    expect(first?.secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(lastApplied<Applied>(bed, 'broker')?.grants[0]?.secret).toBe(first?.secret);

    const oldKey = readFileSync(join(bed.hostDir('broker'), 'sealing.jwk'), 'utf8');
    await expectOk(bed.meshHost('rotate', '--dir', bed.hostDir('broker')), 'mesh-host rotate broker');
    await eventually('both hosts to apply a new secret after the broker’s rotation', () => {
      const [app, broker] = [
        lastApplied<Applied>(bed, 'app')?.provisions[0],
        lastApplied<Applied>(bed, 'broker')?.grants[0],
      ];
      return app && broker && app.generation !== first?.generation && app.secret === broker.secret
        ? true
        : undefined;
    });
    await appliedAsSent(bed, ['broker', 'app']);
    const second = lastApplied<Applied>(bed, 'app')?.provisions[0]?.secret as string;
    expect(second).not.toBe(first?.secret);
    const sent = await expectOk(bed.mesh('declaration', 'broker'), 'mesh declaration broker');
    const grant = (sent.json as { declaration: { grants: Array<{ sealed: string; generation: string }> } })
      .declaration.grants[0];
    const binding = {
      node: 'broker',
      side: 'provider' as const,
      relation: relationOf({
        consumerNode: 'app',
        consumerModule: 'web',
        providerNode: 'broker',
        providerModule: 'rabbitmq',
      }),
      generation: grant?.generation ?? '',
    };
    const old = (await importJWK(JSON.parse(oldKey), 'ECDH-ES')) as Parameters<typeof openSealed>[1];
    await expect(openSealed(grant?.sealed ?? '', old, binding)).rejects.toThrow(/does not open/);

    // The scan: neither secret is in the store, the control plane's folder, or anything the bed saw.
    const secrets = [first?.secret as string, second];
    const client = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: bed.dynamodbEndpoint });
    const documents = documentClient(client);
    const items = [
      ...(await scanAll(documents, 'the inventory table', { TableName: bed.tableName('inventory') })),
      ...(await scanAll(documents, 'the identity table', { TableName: bed.tableName('identity') })),
    ];
    client.destroy();
    const held = [
      { where: 'the tables', text: JSON.stringify(items) },
      ...filesUnder(join(bed.dir, 'control')).map(({ path, text }) => ({ where: path, text })),
      { where: 'every process’s output and every command the bed ran', text: bed.dump() },
    ];
    expect(items.length).toBeGreaterThan(10);
    for (const secret of secrets)
      expect(held.filter(({ text }) => text.includes(secret)).map(({ where }) => where)).toEqual([]);
  }));
