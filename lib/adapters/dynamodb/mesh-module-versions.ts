import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ModuleVersions } from '../../core/ports.ts';
import { DynamoDBMeshStore } from './mesh-store.ts';

/**
 * Sets a module's current version for the queue's upgrade handling: the module item, then each
 * carrier's assignment with its stale mark in one transaction, so `push --behind` finds them.
 * A module no node was ever assigned is refused with ModuleNotFoundError, nothing written.
 */
export class DynamoDBModuleVersions implements ModuleVersions {
  readonly #store: DynamoDBMeshStore;

  constructor(options: { readonly client: DynamoDBClient; readonly tableName: string }) {
    this.#store = new DynamoDBMeshStore(options);
  }

  setModuleVersion(module: string, version: string) {
    return this.#store.setModuleVersion(module, version);
  }
}
