import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AuditTrail } from '../adapters/audit/audit-trail.ts';
import { makeSFNClient } from '../adapters/aws-clients.ts';
import { DynamoAgentVersions } from '../adapters/mesh/agent-versions.ts';
import { DynamoDBRolloutFacts } from '../adapters/rollout/rollout-facts.ts';
import { StepFunctionsRolloutDriver } from '../adapters/rollout/rollout-flow-driver.ts';
import { DynamoDBRolloutStore } from '../adapters/rollout/rollout-store.ts';
import type { ReleaseRecords } from '../core/agent-release/ports.ts';
import { envelope } from '../core/control/messages.ts';
import type { ControlSender } from '../core/control/ports.ts';
import { AnnouncingRollouts, type EventSink } from '../core/events/index.ts';
import type { ModuleVersions } from '../core/mesh/ports.ts';
import type { PushStore } from '../core/mesh/store.ts';
import type { PushFlow } from '../core/push/ports.ts';
import { Pusher } from '../core/push/pusher.ts';
import { RecordedPushFlow } from '../core/push/records.ts';
import {
  type RolloutDriver,
  type RolloutFacts,
  RolloutKicks,
  type RolloutStore,
} from '../core/rollout/ports.ts';
import type { Rollouts } from '../core/rollout/service.ts';
import { type RolloutOptions, shareText } from '../core/rollout/waves.ts';
import type { MeshConfig } from '../setup/config.ts';

/** The options as a message carries them (the text waves.ts reads back). */
const wavesOf = (options: RolloutOptions) => ({
  waves: options.waves.map(shareText).join(','),
  maxFailures: shareText(options.maxFailures),
  waveTimeout: `${options.waveTimeoutSeconds}s`,
});

/** The rollout parts of lib/server/wiring/parts.ts (docs/decisions/rollouts-in-waves.md), built there the same way. */
export type RolloutParts = {
  readonly rollouts: Rollouts;
  readonly rolloutStore: RolloutStore;
  readonly rolloutFacts: RolloutFacts;
  /** Wakes the driver when a rollout starts or resumes: the local runtime's loop listens. */
  readonly rolloutDriver: RolloutDriver;
};

type Needs = {
  readonly sender: ControlSender;
  readonly moduleVersions: ModuleVersions;
  readonly auditTrail: AuditTrail;
  readonly pushFlow: PushFlow;
  readonly pushStore: PushStore;
  readonly now: () => Date;
  readonly events: EventSink;
  readonly releaseRecords: ReleaseRecords;
};

export function rolloutBuilders(
  partsOf: () => RolloutParts & Needs,
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
): { readonly [Key in keyof RolloutParts]: () => RolloutParts[Key] } {
  const table = () => ({ client: clients.dynamodb, tableName: config.inventoryTable });
  return {
    rolloutStore: () => new DynamoDBRolloutStore({ ...table(), audit: partsOf().auditTrail }),
    rolloutFacts: () => new DynamoDBRolloutFacts(table()),
    rolloutDriver: () =>
      config.rolloutFlowArn
        ? new StepFunctionsRolloutDriver({
            client: makeSFNClient(config),
            stateMachineArn: config.rolloutFlowArn,
          })
        : new RolloutKicks(),
    rollouts: () => {
      const parts = partsOf();
      // a wave is not a push of its own: the flow runs unrecorded, the rollout's record says what it sent
      const flow = parts.pushFlow instanceof RecordedPushFlow ? parts.pushFlow.flow : parts.pushFlow;
      const pusher = new Pusher({ store: parts.pushStore });
      const agentVersions = new DynamoAgentVersions(table());
      return new AnnouncingRollouts(
        {
          store: parts.rolloutStore,
          facts: parts.rolloutFacts,
          wave: (nodes, rollout) => flow.push({ nodes, rollout }),
          behind: async () => pusher.behindOf(await pusher.candidates(false)),
          exists: async (node) => (await parts.pushStore.readNode(node)) !== undefined,
          marked: (nodes) => pusher.markedOf(nodes),
          moveCarriers: (module, version, nodes) => parts.moduleVersions.moveCarriers(module, version, nodes),
          setAgentVersion: (version, nodes, rollout, limit) =>
            agentVersions.setAgentVersion(version, nodes, rollout, limit),
          restoreAgentVersion: (rollout, version, nodes) =>
            agentVersions.restoreAgentVersion(rollout, version, nodes),
          published: async (versions) => {
            const arches = new Map<string, string[]>();
            for (const { manifest } of await parts.releaseRecords.list())
              if (versions.includes(manifest.version))
                arches.set(manifest.version, [...(arches.get(manifest.version) ?? []), manifest.arch]);
            return arches;
          },
          askedOf: (nodes, asking) => agentVersions.askedOf(nodes, asking),
          drive: (record) => parts.rolloutDriver.started(record),
          requestUndo: async (undo, by) => {
            const { id: _id, ...waves } = { id: undo.rollout, ...wavesOf(undo.options) };
            const body = {
              module: undo.module,
              version: undo.version,
              rollout: { id: undo.rollout, undoes: undo.undoes, ...waves },
            };
            await parts.sender.send([
              {
                message: envelope('upgrade', body, parts.now(), by),
                // a send retried within SQS's five minutes is one message
                deduplicationId: `undo-${undo.rollout}`,
              },
            ]);
          },
          driving: (id) => parts.rolloutDriver.driving(id),
          now: parts.now,
        },
        parts.events,
        parts.now,
      );
    },
  };
}
