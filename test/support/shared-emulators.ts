import { type Endpoints, type RunningEmulators, startEmulators } from '../../lib/local/emulators.ts';

/**
 * One DynamoDB Local (in memory) and one fauxqs for the whole run, however many projects' global
 * setups ask: vitest runs every project's global setup in its one main process, each in a module
 * of its own, so the emulators are kept on `globalThis` and stopped when the last project that
 * asked lets them go. Tests keep apart by their table names (test/support/resources.ts, and
 * beds/support/bed.ts for the beds' tables, one prefix a bed).
 */
type Shared = { emulators: Promise<RunningEmulators>; users: number };
const key = Symbol.for('mesh.test.sharedEmulators');
const holder = globalThis as typeof globalThis & { [key]?: Shared };

export async function shareEmulators(): Promise<{ endpoints: Endpoints; release(): Promise<void> }> {
  holder[key] ??= { emulators: startEmulators(), users: 0 };
  const shared = holder[key];
  shared.users += 1;
  let emulators: RunningEmulators;
  try {
    emulators = await shared.emulators;
  } catch (error) {
    if (holder[key] === shared) delete holder[key];
    throw error;
  }
  let released = false;
  return {
    endpoints: emulators.endpoints,
    async release() {
      if (released) return;
      released = true;
      shared.users -= 1;
      if (shared.users > 0) return;
      if (holder[key] === shared) delete holder[key];
      await emulators.stop();
    },
  };
}
