import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';

// A store of its own: what its JVM was started with is on that process's command line.
let store: RunningDynamoDBLocal;

beforeAll(async () => {
  store = await startDynamoDBLocal({ quickStart: true });
});
afterAll(async () => {
  await store?.stop();
});

describe('DynamoDB Local started to live seconds (quickStart)', () => {
  it('compiles with C1 alone', () => {
    const commandLine = readFileSync(`/proc/${store.pid}/cmdline`, 'utf8').split('\0');
    expect(commandLine).toContain('-XX:TieredStopAtLevel=1');
  });
});
