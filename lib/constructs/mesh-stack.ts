import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { type Route, routes as routeTable } from '../api/routes.ts';
import { type FunctionSpec, functionSpecs } from '../functions.ts';
import { consumerTimeoutSeconds } from '../resources.ts';
import { MeshAlarms } from './alarms.ts';
import { MeshApi } from './api.ts';
import { ControlConsumer } from './control-consumer.ts';
import { ControlQueue } from './control-queue.ts';
import { MeshFunctions, timeoutOf } from './functions.ts';
import { PushFlow, pushFlowAslPath } from './push-flow.ts';
import { MeshTables } from './tables.ts';

/** The manifest name of the Lambda REQUEST authorizer in front of host routes. */
export const hostAuthorizerName = 'host-authorizer';

/**
 * The host authorizer's manifest entry, used only while lib/functions.ts has none: its home is
 * the enrolment area's manifest, and once it is there that entry wins.
 */
export const hostAuthorizerSpec: FunctionSpec = {
  name: hostAuthorizerName,
  purpose: 'REQUEST authorizer for host routes: checks the proof of possession before a handler runs',
  access: ['identity:read', 'inventory:read'],
  trigger: 'api',
};

/** The manifest, with the host authorizer when host routes need one and the manifest lacks it. */
export function withHostAuthorizer(
  specs: readonly FunctionSpec[],
  routes: readonly Route[],
): readonly FunctionSpec[] {
  const needed = routes.some((route) => route.auth === 'host');
  const listed = specs.some((spec) => spec.name === hostAuthorizerName);
  return needed && !listed ? [...specs, hostAuthorizerSpec] : specs;
}

export type MeshStackProps = StackProps & {
  /**
   * Keep the tables when the stack is deleted.
   * @default true
   */
  readonly retainData?: boolean;
  /** @default functionSpecs from lib/functions.ts */
  readonly specs?: readonly FunctionSpec[];
  /** @default routes from lib/api/routes.ts */
  readonly routes?: readonly Route[];
  /** @default functions/ at the project root */
  readonly functionsDir?: string;
  /**
   * The push flow's ASL; when the file does not exist the stack has no state machine.
   * @default lib/flow/push.asl.json
   */
  readonly pushFlowAslPath?: string;
  /** @default 5 */
  readonly consumerMaxConcurrency?: number;
};

/**
 * The whole control plane, driven by the shared manifests: one function and role per entry
 * of lib/functions.ts, one method per route of lib/api/routes.ts, the push flow from its ASL.
 */
export class MeshStack extends Stack {
  public readonly tables: MeshTables;
  public readonly control: ControlQueue;
  public readonly functions: MeshFunctions;
  public readonly pushFlow: PushFlow | undefined;
  public readonly api: MeshApi;
  public readonly alarms: MeshAlarms;

  constructor(scope: Construct, id: string, props: MeshStackProps = {}) {
    super(scope, id, props);
    const routes = props.routes ?? routeTable;
    const specs = withHostAuthorizer(props.specs ?? functionSpecs, routes);
    const consumerSpec = specs.find((spec) => spec.trigger === 'queue');

    this.tables = new MeshTables(this, 'Tables', { retain: props.retainData ?? true });
    this.control = new ControlQueue(this, 'ControlQueue', {
      consumerTimeout: Duration.seconds(consumerSpec ? timeoutOf(consumerSpec) : consumerTimeoutSeconds),
    });
    this.functions = new MeshFunctions(this, 'Functions', {
      specs,
      inventoryTable: this.tables.inventory,
      identityTable: this.tables.identity,
      controlQueue: this.control.queue,
      deadLetterQueue: this.control.deadLetterQueue,
      ...(props.functionsDir ? { functionsDir: props.functionsDir } : {}),
    });
    const functionNamed = (name: string) => this.functions.get(name);

    if (consumerSpec) {
      new ControlConsumer(this, 'ControlConsumer', {
        queue: this.control.queue,
        consumer: functionNamed(consumerSpec.name),
        ...(props.consumerMaxConcurrency ? { maxConcurrency: props.consumerMaxConcurrency } : {}),
      });
    }

    const aslPath = props.pushFlowAslPath ?? pushFlowAslPath;
    this.pushFlow = PushFlow.definitionExists(aslPath)
      ? new PushFlow(this, 'PushFlow', { aslPath, specs, functionNamed })
      : undefined;
    if (this.pushFlow) this.functions.connectPushFlow(this.pushFlow.stateMachine);

    const hasAuthorizer = specs.some((spec) => spec.name === hostAuthorizerName);
    this.api = new MeshApi(this, 'Api', {
      routes,
      specs,
      functionNamed,
      ...(hasAuthorizer ? { hostAuthorizer: hostAuthorizerName } : {}),
    });

    this.alarms = new MeshAlarms(this, 'Alarms', {
      deadLetterQueue: this.control.deadLetterQueue,
      functions: this.functions.functions,
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.api.url,
      description: 'the control plane: mesh --api <this URL> (requests are signed with SigV4)',
    });
    new CfnOutput(this, 'InventoryTableName', { value: this.tables.inventory.tableName });
    new CfnOutput(this, 'IdentityTableName', { value: this.tables.identity.tableName });
    new CfnOutput(this, 'ControlQueueUrl', { value: this.control.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.control.deadLetterQueue.queueUrl });
    if (this.pushFlow)
      new CfnOutput(this, 'PushFlowArn', { value: this.pushFlow.stateMachine.stateMachineArn });
  }
}
