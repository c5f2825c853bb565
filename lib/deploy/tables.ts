import { RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  Billing,
  ProjectionType,
  StreamViewType,
  TableEncryptionV2,
  TableV2,
} from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import {
  identityTable,
  inventoryTable,
  type KeyAttribute,
  type TableDescription,
} from '../server/setup/resources.ts';

export type MeshTablesProps = {
  /**
   * Keep the tables (and refuse their deletion) when the stack is deleted.
   * @default true
   */
  readonly retain?: boolean;
};

const attributeType = (key: KeyAttribute) => (key.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER);

/**
 * The inventory and identity tables, built from lib/server/setup/resources.ts and kept apart as the seeds
 * keep them apart. Policy fixed here: on-demand, point-in-time recovery, AWS-managed
 * encryption, retained with deletion protection unless told otherwise.
 */
export class MeshTables extends Construct {
  public readonly inventory: TableV2;
  public readonly identity: TableV2;

  constructor(scope: Construct, id: string, props: MeshTablesProps = {}) {
    super(scope, id);
    const retain = props.retain ?? true;
    this.inventory = this.table('Inventory', inventoryTable, retain);
    this.identity = this.table('Identity', identityTable, retain);
  }

  private table(id: string, description: TableDescription, retain: boolean): TableV2 {
    return new TableV2(this, id, {
      partitionKey: { name: description.partitionKey.name, type: attributeType(description.partitionKey) },
      ...(description.sortKey
        ? { sortKey: { name: description.sortKey.name, type: attributeType(description.sortKey) } }
        : {}),
      globalSecondaryIndexes: description.globalSecondaryIndexes.map((index) => ({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey.name, type: attributeType(index.partitionKey) },
        ...(index.sortKey
          ? { sortKey: { name: index.sortKey.name, type: attributeType(index.sortKey) } }
          : {}),
        ...(index.projection === 'KEYS_ONLY' ? { projectionType: ProjectionType.KEYS_ONLY } : {}),
      })),
      ...(description.timeToLiveAttribute ? { timeToLiveAttribute: description.timeToLiveAttribute } : {}),
      ...(description.stream ? { dynamoStream: StreamViewType[description.stream] } : {}),
      billing: Billing.onDemand(),
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: retain,
      removalPolicy: retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
  }
}
