import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startDynamoDBLocal } from '../../lib/runtime/dynamodb-local.ts';
import { JavaMissingError } from '../../lib/runtime/errors.ts';

// Here rather than in test/unit: it builds a Java runtime with jlink and starts it, seconds of work.
describe('the local runtime names what is missing from the Java it found', () => {
  const path = process.env.PATH;
  afterEach(() => {
    process.env.PATH = path;
  });

  it('asks for a JDK when the Java found is a runtime without its compiler', async () => {
    // a Java 17 runtime of java.base alone: what a JRE lacks for DynamoDB Local's loopback launcher
    const folder = mkdtempSync(join(tmpdir(), 'mesh-jre-'));
    try {
      execFileSync('jlink', ['--add-modules', 'java.base', '--output', join(folder, 'jre')]);
      process.env.PATH = `${join(folder, 'jre', 'bin')}:${path}`;
      const error = await startDynamoDBLocal().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(JavaMissingError);
      expect((error as Error).message).toMatch(/found a Java runtime without its compiler.*openjdk-17-jdk/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
