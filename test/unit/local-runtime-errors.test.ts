import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { assertJavaAvailable } from '../../lib/local/dynamodb-local.ts';
import { JavaMissingError, PortInUseError } from '../../lib/local/errors.ts';
import { assertPortFree } from '../../lib/local/tcp-ports.ts';
import { readConfig } from '../../lib/server/setup/config.ts';

describe('local runtime errors say what to do in one line', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  it('names Java 17 and the way around it when java is missing', () => {
    process.env.PATH = '/nonexistent';
    expect(() => assertJavaAvailable()).toThrow(JavaMissingError);
    expect(() => assertJavaAvailable()).toThrow(/Java 17 or newer.*AWS_ENDPOINT_URL_DYNAMODB/);
  });

  it('names the port and the variable to change when the port is taken', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as { port: number }).port;
    try {
      const error = await assertPortFree(port, 'MESH_PORT').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PortInUseError);
      expect((error as Error).message).toBe(
        `port ${port} is already in use: stop what holds it, or choose another port with MESH_PORT`,
      );
    } finally {
      server.close();
    }
  });

  it('refuses an incomplete configuration, naming what is missing', () => {
    expect(() => readConfig({})).toThrow(/inventoryTable/);
  });
});
