import * as z from 'zod';

/**
 * Configuration read once, at a process's or Lambda's start, and passed in from there.
 * Endpoints are not here: the AWS SDK reads AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>
 * itself, which is what lets the same code talk to AWS, LocalStack or the embedded emulators.
 */
const configSchema = z.object({
  region: z.string().min(1),
  inventoryTable: z.string().min(3),
  identityTable: z.string().min(3),
  controlQueueUrl: z.url(),
  deadLetterQueueUrl: z.url(),
  /** When set, push runs on the Step Functions Express state machine; otherwise in-process from the same ASL. */
  pushFlowArn: z.string().startsWith('arn:').optional(),
  /** How long a message may be held before it is let go as lost; two minutes unless shortened (tests, beds). */
  holdBoundSeconds: z.coerce.number().int().positive().max(3600).optional(),
});

export type MeshConfig = z.infer<typeof configSchema>;

export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): MeshConfig {
  const parsed = configSchema.safeParse({
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    inventoryTable: env.MESH_INVENTORY_TABLE,
    identityTable: env.MESH_IDENTITY_TABLE,
    controlQueueUrl: env.MESH_CONTROL_QUEUE_URL,
    deadLetterQueueUrl: env.MESH_DEAD_LETTER_QUEUE_URL,
    pushFlowArn: env.MESH_PUSH_FLOW_ARN || undefined,
    holdBoundSeconds: env.MESH_HOLD_BOUND_SECONDS || undefined,
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigurationError(`Mesh configuration is incomplete (${problems.join('; ')})`);
  }
  return parsed.data;
}

/** The environment variables that carry a MeshConfig, for the local runtime and the CDK functions. */
export function configEnvironment(config: MeshConfig): Record<string, string> {
  return {
    AWS_REGION: config.region,
    MESH_INVENTORY_TABLE: config.inventoryTable,
    MESH_IDENTITY_TABLE: config.identityTable,
    MESH_CONTROL_QUEUE_URL: config.controlQueueUrl,
    MESH_DEAD_LETTER_QUEUE_URL: config.deadLetterQueueUrl,
    ...(config.pushFlowArn ? { MESH_PUSH_FLOW_ARN: config.pushFlowArn } : {}),
    ...(config.holdBoundSeconds ? { MESH_HOLD_BOUND_SECONDS: String(config.holdBoundSeconds) } : {}),
  };
}
