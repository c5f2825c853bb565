import type { PushRecordReader, PushRecordWriter } from './push-records.ts';

export type { PushRecordReader, PushRecordWriter } from './push-records.ts';
export type { PushStarter } from './push-runs.ts';
export type { PushTaskFunctions } from './push-steps.ts';
/**
 * The mesh area's ports, the one place a handler or an adapter names them from. Each is declared
 * beside the core code that uses it: the store's in store.ts, the push record's in
 * push-records.ts, the starter in push-runs.ts. The push flow, ModuleVersions, DeliveryReader
 * and StatusReader cross areas and are in lib/core/ports.ts.
 */
export type { MeshChangeStore, MeshRemovals, PushStore } from './store.ts';

/** Where every push is recorded: written as it starts, runs and ends, read by the operator's routes. */
export type PushRecords = PushRecordWriter & PushRecordReader;
