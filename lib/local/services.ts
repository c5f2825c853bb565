import { applyJobDriverService } from './apply-job-driver.ts';
import { embeddedBrokerService } from './broker-service.ts';
import { controlEventSource } from './event-source-control.ts';
import type { LocalParts } from './parts.ts';
import { rolloutDriverService } from './rollout-driver.ts';
import { summaryStreamSource } from './stream-source-summary.ts';

/**
 * Background work the local runtime runs beside the HTTP API, standing in for what AWS runs
 * for us (the SQS event source mapping, for one). Each starts with the wiring's parts and
 * stops when the runtime stops, before the emulators do.
 */
export type LocalService = {
  readonly name: string;
  /** `dataDir`: the runtime's data folder, where a service keeps what must outlive the process. */
  start(
    parts: LocalParts,
    where?: { readonly dataDir?: string | undefined },
  ): Promise<{ stop(): Promise<void> }>;
};

export const localServices: LocalService[] = [
  controlEventSource,
  embeddedBrokerService,
  summaryStreamSource,
  rolloutDriverService,
  applyJobDriverService,
];
