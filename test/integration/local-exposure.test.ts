import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type RunningLocalRuntime, startLocalRuntime } from '../../lib/local/local-runtime.ts';

/**
 * Everything the local runtime listens on is for this machine only, and its data folder for
 * this user only. "From the network" is tested from the addresses of this machine that are not
 * loopback (one IPv4, one IPv6 where it has them): a socket bound to loopback refuses
 * connections addressed to them, one bound to every interface accepts them. A machine with no
 * such address skips this file, and the skip names why.
 */
const outside = nonLoopbackAddresses();

function nonLoopbackAddresses(): string[] {
  const external = Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal);
  const ipv4 = external.find((entry) => entry.family === 'IPv4')?.address;
  // link-local addresses need a zone to be dialled; a global or unique-local one does not
  const ipv6 = external.find(
    (entry) => entry.family === 'IPv6' && !entry.address.startsWith('fe80'),
  )?.address;
  return [ipv4, ipv6].filter((address): address is string => address !== undefined);
}

/** 'accepted', or the error code the connection attempt ended with (ECONNREFUSED when nothing listens there). */
function knock(address: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, localAddress: address, timeout: 3_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

const portOf = (url: string) => Number(new URL(url).port);

describe.skipIf(outside.length === 0)(
  `the local runtime seen from ${outside.join(' and ') || 'nowhere: this machine has no non-loopback address'}`,
  () => {
    let runtime: RunningLocalRuntime;
    let dataDir: string;
    beforeAll(async () => {
      dataDir = join(mkdtempSync(join(tmpdir(), 'mesh-exposure-')), 'data');
      // a data folder left world-readable by an older runtime is made private on start
      mkdirSync(join(dataDir, 'sqs'), { recursive: true, mode: 0o755 });
      chmodSync(dataDir, 0o755);
      writeFileSync(join(dataDir, 'left-behind'), 'x', { mode: 0o644 });
      runtime = await startLocalRuntime({ port: 0, mqttPort: 0, dataDir, given: {} });
    });
    afterAll(async () => {
      await runtime?.stop();
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    });

    /** What each address answers on `port`. */
    const knockEach = async (port: number) => {
      const answers: Record<string, string> = {};
      for (const address of outside) answers[address] = await knock(address, port);
      return answers;
    };
    const everywhere = (answer: string) => Object.fromEntries(outside.map((address) => [address, answer]));

    it('can reach a socket listening on every interface at those addresses (the probe works)', async () => {
      const open = createServer();
      await new Promise<void>((resolve) => open.listen(0, '::', resolve));
      const port = (open.address() as { port: number }).port;
      try {
        expect(await knockEach(port)).toEqual(everywhere('accepted'));
      } finally {
        open.close();
      }
    });

    it('is refused by DynamoDB Local, fauxqs, the MQTT broker and the API there, and answered on loopback', async () => {
      const listening = {
        'DynamoDB Local': portOf(runtime.emulators.endpoints.dynamodb),
        fauxqs: portOf(runtime.emulators.endpoints.sqs),
        'the MQTT broker': portOf(runtime.brokerUrl),
        'the local API': portOf(runtime.url),
      };
      const seen: Record<string, { outside: Record<string, string>; loopback: string }> = {};
      for (const [name, port] of Object.entries(listening))
        seen[name] = { outside: await knockEach(port), loopback: await knock('127.0.0.1', port) };
      const expected = Object.fromEntries(
        Object.keys(listening).map((name) => [
          name,
          { outside: everywhere('ECONNREFUSED'), loopback: 'accepted' },
        ]),
      );
      expect(seen).toEqual(expected);
    });

    it('is refused there by the emulators the test run shares (started without a data folder)', async () => {
      const { dynamodb, sqs } = inject('endpoints');
      expect({
        dynamodb: await knockEach(portOf(dynamodb)),
        sqs: await knockEach(portOf(sqs)),
      }).toEqual({ dynamodb: everywhere('ECONNREFUSED'), sqs: everywhere('ECONNREFUSED') });
    });

    it('keeps its data folder for this user only: folders 0700, files 0600, those the emulators made too', async () => {
      // a write makes DynamoDB Local touch its files
      const added = await fetch(`${runtime.url}/nodes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ node: 'exposure-check' }),
      });
      expect(added.status).toBe(201);
      const loose: string[] = [];
      const walk = (path: string) => {
        const mode = statSync(path).mode & 0o777;
        const isFolder = statSync(path).isDirectory();
        if (mode !== (isFolder ? 0o700 : 0o600))
          loose.push(`${path.slice(dataDir.length) || '/'} ${mode.toString(8)}`);
        if (isFolder) for (const entry of readdirSync(path)) walk(join(path, entry));
      };
      walk(dataDir);
      const files = readdirSync(dataDir, { recursive: true }).map(String);
      expect(files).toEqual(expect.arrayContaining([join('dynamodb', 'shared-local-instance.db')]));
      expect(files.some((file) => file.startsWith('sqs/'))).toBe(true);
      expect(loose).toEqual([]);
    });
  },
);
