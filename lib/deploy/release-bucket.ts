import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { acknowledge } from './nag.ts';

export type ReleaseBucketProps = {
  /** Kept when the stack is deleted, as the tables are. @default true */
  readonly retain?: boolean;
};

/**
 * The bucket the agent's executables are kept in (`executables/<sha256>`,
 * lib/server/adapters/agent-release/s3-release-files.ts). Nobody reads it but through a URL the
 * control plane presigned for one object and a quarter of an hour: no public access, TLS only,
 * S3-managed encryption, and an upload left unfinished is let go after a day.
 */
export class ReleaseBucket extends Construct {
  public readonly bucket: Bucket;

  constructor(scope: Construct, id: string, props: ReleaseBucketProps = {}) {
    super(scope, id);
    const retain = props.retain ?? true;
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      autoDeleteObjects: false,
    });
    acknowledge(this.bucket, {
      id: 'AwsSolutions-S1',
      reason:
        'each publish and each upgrade is on the audit trail (agent.publish, rollout.start); an object is reached only through a URL the control plane presigned, for one object',
    });
  }
}
