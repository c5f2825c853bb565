import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AuditTrail } from '../adapters/audit/audit-trail.ts';
import { makeSFNClient } from '../adapters/aws-clients.ts';
import { StepFunctionsApplyFlow } from '../adapters/mesh-file/apply-flow-starter.ts';
import { DynamoDBApplyJobs } from '../adapters/mesh-file/apply-jobs.ts';
import { DynamoDBLiveMeshReader, DynamoDBMeshSliceReader } from '../adapters/mesh-file/live-mesh-reader.ts';
import { DynamoDBDescribedRevisions } from '../adapters/mesh-file/mesh-file-described.ts';
import { DynamoDBMeshFileWriter } from '../adapters/mesh-file/mesh-file-writer.ts';
import { DynamoDBMeshUploads } from '../adapters/mesh-file/uploads.ts';
import { AnnouncingApplyJobs, type EventSink } from '../core/events/index.ts';
import type { MeshService } from '../core/mesh/service.ts';
import type { ApplyFlow, ApplyJobStore } from '../core/mesh-file/ports.ts';
import { MeshFileService } from '../core/mesh-file/service.ts';
import type { MeshUploadStore } from '../core/mesh-file/uploads.ts';
import type { SignalAnnouncer } from '../core/signal/announce.ts';
import type { MeshConfig } from '../setup/config.ts';

function missing(what: string, setting: string): never {
  throw new Error(
    `no ${what}: configure ${setting} (a deployed stack), or run the local runtime, which stands in for it`,
  );
}

/** The mesh file's parts of lib/server/wiring/parts.ts (docs/mesh-file.md), built there the same way. */
export type MeshFileParts = {
  /** The mesh as a file: export, plan, apply. */
  readonly meshFiles: MeshFileService;
  /** The records of applies that outlived their request, and their files. */
  readonly applyJobs: ApplyJobStore;
  /** Starts the apply flow on AWS; wakes the local runtime's driver (lib/local/apply-job-driver.ts) here. */
  readonly applyFlow: ApplyFlow;
  /** Mesh files too large for one request, uploaded in parts. */
  readonly meshUploads: MeshUploadStore;
};

type Needs = {
  readonly auditTrail: AuditTrail;
  readonly meshService: MeshService;
  readonly signals: SignalAnnouncer;
  readonly events: EventSink;
};

export function meshFileBuilders(
  partsOf: () => MeshFileParts & Needs,
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
  localApplyFlow?: () => ApplyFlow,
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
        slices: new DynamoDBMeshSliceReader(table()),
      });
    },
    // the record that ends a job tells `apply.completed` or `apply.failed` (docs/events.md)
    applyJobs: () => new AnnouncingApplyJobs(new DynamoDBApplyJobs(table()), partsOf().events),
    meshUploads: () => new DynamoDBMeshUploads(table()),
    applyFlow: () =>
      config.applyFlowArn
        ? new StepFunctionsApplyFlow({ client: makeSFNClient(config), stateMachineArn: config.applyFlowArn })
        : (localApplyFlow?.() ?? missing('apply flow', 'MESH_APPLY_FLOW_ARN')),
  };
}
