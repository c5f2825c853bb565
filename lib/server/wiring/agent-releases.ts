import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDBReleaseRecords } from '../adapters/agent-release/release-records.ts';
import { S3ReleaseFiles } from '../adapters/agent-release/s3-release-files.ts';
import type { AuditTrail } from '../adapters/audit/audit-trail.ts';
import { makeS3Client } from '../adapters/aws-clients.ts';
import type { ReleaseFiles, ReleaseRecords } from '../core/agent-release/ports.ts';
import { AgentReleases } from '../core/agent-release/service.ts';
import type { MeshConfig } from '../setup/config.ts';

/** The parts of lib/server/wiring/parts.ts that serve the agent's releases, built there the same way. */
export type AgentReleaseParts = {
  readonly releaseRecords: ReleaseRecords;
  readonly releaseFiles: ReleaseFiles;
  readonly agentReleases: AgentReleases;
};

type Needs = { readonly auditTrail: AuditTrail; readonly now: () => Date };

export function agentReleaseBuilders(
  partsOf: () => AgentReleaseParts & Needs,
  clients: { readonly dynamodb: DynamoDBDocumentClient },
  config: MeshConfig,
  standIn: (() => ReleaseFiles) | undefined,
): { readonly [Key in keyof AgentReleaseParts]: () => AgentReleaseParts[Key] } {
  return {
    releaseRecords: () =>
      new DynamoDBReleaseRecords({
        client: clients.dynamodb,
        tableName: config.inventoryTable,
        audit: partsOf().auditTrail,
      }),
    releaseFiles: () => {
      if (config.releaseBucket)
        return new S3ReleaseFiles({ client: makeS3Client(config), bucket: config.releaseBucket });
      if (standIn) return standIn();
      throw new Error(
        'no release bucket: configure MESH_RELEASE_BUCKET (a deployed stack), or run the local runtime, which keeps releases in its data folder',
      );
    },
    agentReleases: () =>
      new AgentReleases({
        records: partsOf().releaseRecords,
        files: partsOf().releaseFiles,
        trusted: config.releaseKeys,
        now: partsOf().now,
      }),
  };
}
