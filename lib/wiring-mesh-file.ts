import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { makeSFNClient } from './adapters/aws-clients.ts';
import { DynamoDBApplyJobs } from './adapters/dynamodb/apply-jobs.ts';
import type { AuditTrail } from './adapters/dynamodb/audit-trail.ts';
import { DynamoDBLiveMeshReader } from './adapters/dynamodb/live-mesh-reader.ts';
import { DynamoDBDescribedRevisions } from './adapters/dynamodb/mesh-file-described.ts';
import { DynamoDBMeshFileWriter } from './adapters/dynamodb/mesh-file-writer.ts';
import { StepFunctionsApplyFlow } from './adapters/stepfunctions/apply-flow-starter.ts';
import { LocalApplyFlow } from './adapters/stepfunctions/local-apply-flow.ts';
import type { MeshConfig } from './config.ts';
import type { MeshService } from './core/mesh/service.ts';
import type { ApplyFlow, ApplyJobStore } from './core/mesh-file/ports.ts';
import { MeshFileService } from './core/mesh-file/service.ts';
import type { SignalAnnouncer } from './core/signal/announce.ts';

/** The mesh file's parts of lib/wiring.ts (docs/mesh-file.md), built there the same way. */
export type MeshFileParts = {
  /** The mesh as a file: export, plan, apply. */
  readonly meshFiles: MeshFileService;
  /** The records of applies that outlived their request, and their files. */
  readonly applyJobs: ApplyJobStore;
  /** Starts the apply flow on AWS; wakes the local runtime's driver (lib/runtime/apply-job-driver.ts) here. */
  readonly applyFlow: ApplyFlow;
};

type Needs = {
  readonly auditTrail: AuditTrail;
  readonly meshService: MeshService;
  readonly signals: SignalAnnouncer;
};

export function meshFileBuilders(
  partsOf: () => MeshFileParts & Needs,
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
): { readonly [Key in keyof MeshFileParts]: () => MeshFileParts[Key] } {
  const table = () => ({ client: clients.dynamodb, tableName: config.inventoryTable });
  return {
    meshFiles: () => {
      const parts = partsOf();
      return new MeshFileService({
        reader: new DynamoDBLiveMeshReader(table()),
        writer: new DynamoDBMeshFileWriter({ ...table(), audit: parts.auditTrail }),
        removals: parts.meshService,
        removedNode: (node) => parts.signals.revoked(node).then(() => undefined),
        described: new DynamoDBDescribedRevisions(table()),
      });
    },
    applyJobs: () => new DynamoDBApplyJobs(table()),
    applyFlow: () =>
      config.applyFlowArn
        ? new StepFunctionsApplyFlow({ client: makeSFNClient(config), stateMachineArn: config.applyFlowArn })
        : new LocalApplyFlow(),
  };
}
