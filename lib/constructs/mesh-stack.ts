import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ControlQueue } from './control-queue.ts';
import { MeshTables } from './tables.ts';

export type MeshStackProps = StackProps & {
  /**
   * Keep the tables when the stack is deleted.
   * @default true
   */
  readonly retainData?: boolean;
};

/** The whole control plane: one construct per concern, wired together here. */
export class MeshStack extends Stack {
  public readonly tables: MeshTables;
  public readonly control: ControlQueue;

  constructor(scope: Construct, id: string, props: MeshStackProps = {}) {
    super(scope, id, props);
    this.tables = new MeshTables(this, 'Tables', { retain: props.retainData ?? true });
    this.control = new ControlQueue(this, 'ControlQueue');
  }
}
