import type { TestProject } from 'vitest/node';
import { shareEmulators } from './shared-emulators.ts';

/** The run's DynamoDB Local and fauxqs (test/support/shared-emulators.ts), for a project's tests. */
export default async function setup(project: TestProject) {
  const emulators = await shareEmulators();
  project.provide('endpoints', emulators.endpoints);
  return () => emulators.release();
}

declare module 'vitest' {
  export interface ProvidedContext {
    endpoints: { dynamodb: string; sqs: string };
  }
}
