import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MeshConfig } from '../server/setup/config.ts';
import { type Parts, type PartsOptions, partsFor } from '../server/wiring/parts.ts';
import { recordingCalls } from './call-record.ts';
import { EmbeddedBrokerPublisher } from './embedded-broker-publisher.ts';
import { InProcessPushStarter } from './in-process-push-starter.ts';
import { LocalApplyFlow } from './local-apply-flow.ts';
import { LocalPushFlow } from './local-push-flow.ts';
import { LocalReleaseFiles } from './release-files.ts';
import { enforcingQuotas } from './sdk-quotas.ts';

/** The parts on one machine: the wiring's, with the embedded broker the local runtime attaches to. */
export type LocalParts = Parts & {
  /** The local runtime's broker attaches here (lib/local/broker/): the push's signals go to it. */
  readonly embeddedBroker: EmbeddedBrokerPublisher;
  /** The executables of the agent's releases, served by the local API's server (release-files.ts). */
  readonly localReleaseFiles: LocalReleaseFiles;
};

export type LocalPartsOptions = Omit<PartsOptions, 'standIns'> & {
  /** Every Retry of the local push flow waits this long instead of the ASL's own waits (tests). */
  readonly flowRetryIntervalMs?: number;
  /** Told each push flow state's and task's size in bytes (benches: the largest state). */
  readonly flowMeasured?: (state: string, bytes: number) => void;
};

/**
 * The wiring's parts (lib/server/wiring/parts.ts) with what stands in for AWS on one machine:
 * the push flow's ASL run in-process (aws-local-stepfunctions), pushes run in this process, the
 * apply jobs' driver woken in-process, the embedded broker, and every SDK client holding AWS's
 * quotas (lib/local/sdk-quotas.ts) and recording the calls it makes for the rehearsal (MESH_CALL_RECORD). What the configuration names on AWS (a
 * state machine's ARN, an IoT endpoint) is used instead, as Lambda would.
 */
export function localPartsFor(config: MeshConfig, options: LocalPartsOptions = {}): LocalParts {
  const { flowRetryIntervalMs, flowMeasured, ...rest } = options;
  const embeddedBroker = new EmbeddedBrokerPublisher();
  // A runtime without a data folder keeps them in one of its own, gone with the machine's temporary files.
  const localReleaseFiles = new LocalReleaseFiles({
    folder:
      config.releaseFolder ??
      join(tmpdir(), `mesh-releases-${process.pid}-${randomBytes(3).toString('hex')}`),
  });
  const parts = partsFor(config, {
    ...rest,
    standIns: {
      pushFlow: (tasks) =>
        new LocalPushFlow({
          tasks,
          ...(flowRetryIntervalMs !== undefined ? { retryIntervalMs: flowRetryIntervalMs } : {}),
          ...(flowMeasured ? { measured: flowMeasured } : {}),
        }),
      pushStarter: (run) => new InProcessPushStarter(run),
      applyFlow: () => new LocalApplyFlow(),
      signalPublisher: () => embeddedBroker,
      releaseFiles: () => localReleaseFiles,
      client: (client) => enforcingQuotas(recordingCalls(client)),
    },
  });
  Object.defineProperty(parts, 'embeddedBroker', { value: embeddedBroker, enumerable: true });
  Object.defineProperty(parts, 'localReleaseFiles', { value: localReleaseFiles, enumerable: true });
  return parts as LocalParts;
}
