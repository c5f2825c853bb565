#!/usr/bin/env node
/**
 * The screenshot of the console in the README and docs/console.md: a small mesh as an operator
 * would have it after a day (hosts enrolled and reporting, one node behind, one applying, one
 * host never enrolled, a message let go), on its own emulators. Not a test; run it by hand:
 *
 *   npx node test/console/screenshot.ts docs/console.png
 */
import { randomBytes } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { startLocalRuntime } from '../../lib/local/local-runtime.ts';
import { makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { envelope } from '../../lib/server/core/control/messages.ts';
import { presenterKeys } from '../integration/enrol-fixtures.ts';
import { openBrowser } from '../support/browser.ts';

const out = process.argv[2] ?? 'docs/console.png';
const runtime = await startLocalRuntime({
  port: 0,
  resourcePrefix: `shot-${randomBytes(3).toString('hex')}`,
  logLevel: 'SILENT',
  consoleRefreshSeconds: 1,
});
const browser = await openBrowser({ width: 1440, height: 1000 });
try {
  const api = new ApiClient(runtime.url);
  const nodes = ['broker', 'db', 'web1', 'web2', 'worker1', 'monitor'];
  for (const node of nodes) await api.call('POST', '/nodes', { node });
  const assign = (node: string, module: string, provides?: string) =>
    api.call('PUT', `/nodes/${node}/modules/${module}`, provides ? { provides } : {});
  const consume = (consumer: string, provider: string) => {
    const [node, module] = consumer.split('/');
    const [providerNode, providerModule] = provider.split('/');
    return api.call('POST', `/nodes/${node}/modules/${module}/consumes`, {
      provider: { node: providerNode, module: providerModule },
    });
  };
  await assign('broker', 'rabbitmq', 'amqp');
  await assign('db', 'postgres', 'postgres');
  await assign('monitor', 'prometheus', 'metrics');
  for (const web of ['web1', 'web2']) {
    await assign(web, 'nginx');
    await assign(web, 'app');
    await consume(`${web}/app`, 'broker/rabbitmq');
    await consume(`${web}/app`, 'db/postgres');
  }
  await assign('worker1', 'jobs');
  await consume('worker1/jobs', 'broker/rabbitmq');
  await consume('worker1/jobs', 'db/postgres');
  await assign('db', 'exporter');
  await consume('db/exporter', 'monitor/prometheus');
  await api.call('POST', '/push', { node: 'web1' });
  await api.call('POST', '/push', { behind: true });

  let sequence = 0;
  for (const node of nodes.filter((n) => n !== 'worker1')) {
    const { token } = await api.call<{ token: string }>('POST', `/nodes/${node}/token`, {});
    await api.call('POST', '/enrol', { node, token, keys: await presenterKeys() });
    const { revision } = await api.call<{ revision: number }>('GET', `/nodes/${node}/declaration`);
    const state = node === 'web2' ? 'applying' : 'applied';
    sequence += 1;
    await runtime.parts.sender.send([
      { message: envelope('report', { node, sequence, state, revision, sentAt: new Date().toISOString() }) },
    ]);
  }
  await api.call('POST', '/nodes/worker1/token', { ttl: '7d' });
  await assign('web2', 'cache');
  const sqs = makeSQSClient({ region: runtime.config.region, endpoints: runtime.config.endpoints });
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: runtime.config.controlQueueUrl,
      MessageBody: '{"type":"report","subject":"report:web9"}',
      MessageGroupId: 'report:web9',
    }),
  );
  sqs.destroy();
  await new Promise((resolve) => setTimeout(resolve, 2000));

  const page = await browser.context.newPage();
  await page.goto(`${runtime.url}/console`);
  await page.waitForSelector('body[data-state="ready"]');
  await page.click('[data-node="db"]');
  await page.waitForSelector('#node-title:has-text("db")');
  await page.click('#consumed-by button:has-text("web2")');
  await page.waitForSelector('#node-title:has-text("web2")');
  await page.screenshot({ path: out });
  process.stdout.write(`wrote ${out}\n`);
} finally {
  await browser.close();
  await runtime.stop();
}
