import type { TestProject } from 'vitest/node';
import { startEmulators } from '../../lib/runtime/emulators.ts';

/** One DynamoDB Local (in memory) and one fauxqs for the whole integration run. */
export default async function setup(project: TestProject) {
  const emulators = await startEmulators();
  project.provide('endpoints', emulators.endpoints);
  return async () => {
    await emulators.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    endpoints: { dynamodb: string; sqs: string };
  }
}
