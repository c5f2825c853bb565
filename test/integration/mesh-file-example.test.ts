import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningEventSource, startEventSource } from '../../lib/local/event-source.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { controlConsumerHandler } from '../../lib/server/api/handlers/control-consumer.ts';
import type { PushPlan } from '../../lib/server/core/push/plan.ts';
import type { PushOutcome } from '../../lib/server/core/push/ports.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The example of docs/mesh-file.md, as the document shows it: broker-1, web-1 and the group
 * web-001 … web-800, 801 consumers of broker-1/rabbit. Taken from the document itself, so the
 * example users copy is the one that is applied.
 */
function documentedExample(): string {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/mesh-file.md'), 'utf8');
  const block = /```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block?.includes('web-[001-800]'))
    throw new Error('docs/mesh-file.md has no example with web-[001-800]');
  return block;
}

let api: RunningApi;
let parts: Parts;
let source: RunningEventSource;
const folder = mkdtempSync(join(tmpdir(), 'mesh-file-example-'));
const mesh = (args: string[]) => runMesh(api.url, args);

beforeAll(async () => {
  const config = await provisionTestResources('example801');
  parts = localPartsFor(config);
  api = await startLocalApi({ port: 0, parts });
  // the control queue taken as `npm start` takes it: the file's module version is an upgrade on it
  source = startEventSource({
    queueUrl: config.controlQueueUrl,
    sqs: makeSQSClient(config),
    handler: controlConsumerHandler(parts),
    pollers: 1,
    waitTimeSeconds: 1,
  });
});

afterAll(async () => {
  await source?.stop();
  await api?.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe('the documented example, a provider of 801 consumers, through the CLI', () => {
  const path = join(folder, 'mesh.yaml');

  it('applies, and then diff exits 0: the mesh holds the file, broker-1 consumed by all 801', async () => {
    writeFileSync(path, documentedExample());
    const applied = await mesh(['apply', '-f', path]);
    expect(applied.code, applied.output).toBe(ExitCode.ok);
    expect(applied.stdout).toContain('added 802 nodes, 802 modules, 801 relations');
    expect(applied.stdout).toContain('version rabbit (none) → 3.13.1: queued upgrade:rabbit');

    // the version is set once the queue's consumer takes the upgrade
    let diff = await mesh(['diff', '-f', path]);
    for (let waited = 0; diff.code !== 0 && waited < 30_000; waited += 500) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      diff = await mesh(['diff', '-f', path]);
    }
    expect(diff.code, diff.stdout).toBe(0);
    expect(diff.stdout).toContain('the mesh matches the file');
    expect((await parts.meshView.details('broker-1'))?.consumedBy).toHaveLength(801);
  }, 600_000);

  it('push --behind then leaves nothing behind, and the audit (push --behind --full --plan) finds nothing', async () => {
    const pushed = await mesh(['--json', 'push', '--behind', '--max-rounds', '5']);
    expect(pushed.code, pushed.output).toBe(ExitCode.ok);
    const outcome = JSON.parse(pushed.stdout) as PushOutcome;
    expect(outcome.behind).toEqual([]);
    // Every node sent, by this push or by the one the file's rabbit upgrade ran when the queue took
    // it (which of the two sent more is a race): none is left never sent.
    const { nodes } = await new ApiClient(api.url).call<{ nodes: NodeStatus[] }>('GET', '/status?limit=1000');
    expect(nodes).toHaveLength(802);
    expect(nodes.filter((node) => node.sentRevision === null).map((node) => node.node)).toEqual([]);

    // Every node recomposed: none differs from what it was sent.
    const audit = await mesh(['--json', 'push', '--behind', '--full', '--plan']);
    expect(audit.code, audit.output).toBe(ExitCode.ok);
    expect((JSON.parse(audit.stdout) as PushPlan).behind).toEqual([]);
    expect((await mesh(['diff', '-f', path])).code).toBe(0);
  }, 600_000);
});
