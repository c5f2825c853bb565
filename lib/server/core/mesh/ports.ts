// The mesh area's ports, named in one place for the handlers. Each is declared beside the core
// code that uses it, with the types it carries: the store's in store.ts, the push record's in
// push-records.ts, the starter in push-runs.ts, the flow's tasks in push-steps.ts. The push
// flow, ModuleVersions, DeliveryReader and StatusReader cross areas: lib/server/core/ports.ts.

import type { PushRecordReader, PushRecordWriter } from '../push/records.ts';

export type { PushRecordReader, PushRecordWriter } from '../push/records.ts';
export type { PushStarter } from '../push/runs.ts';
export type { PushTaskFunctions } from '../push/steps.ts';
export type { MeshChangeStore, MeshRemovals, PushStore } from './store.ts';

/** Where every push is recorded: written as it starts, runs and ends, read by the operator's routes. */
export type PushRecords = PushRecordWriter & PushRecordReader;
