import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, meshSubject } from '../../core/audit/record.ts';
import { ModuleNotFoundError } from '../../core/mesh/errors.ts';
import type { ModuleVersions } from '../../core/mesh/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { type AuditedStoreOptions, AuditedTableStore } from '../audit/audit-trail.ts';
import {
  assignmentKey,
  carrierKey,
  carrierPrefix,
  markUpdates,
  moduleKey,
  modulePartition,
} from '../dynamodb/mesh-items.ts';
import { itemPresent, queryAll, transact } from '../dynamodb/requests.ts';

// An unknown module is refused, not invented: a record with no kind would block its first
// `assign --provides` for good.
const moduleKnown = itemPresent;
const moduleAssigned = itemPresent;
const carrierStillThere = itemPresent;
const notYetAtVersion = '(attribute_not_exists(version) OR version <> :version)';

/**
 * Carriers moved at once, each in its own transaction, and no item in two of them: a check on
 * the module item in each would make concurrent transactions conflict on AWS. Each writes one
 * item in the module's partition and one in `mesh#marked`; 8 at about 15 ms a transaction is
 * near the 1,000 write units a second one partition takes. A throttle is the store saying
 * "not now": the upgrade is held and settled again, and what was moved is skipped.
 */
const carriersInFlight = 8;

/** Carriers read a page at a time by an upgrade's pass (a multiple of `carriersInFlight`). */
const carriersPerPage = 256;

const store = 'the inventory table';

/**
 * Sets a module's current version for the queue's upgrade handling: the module item with the
 * upgrade's audit record (docs/audit.md), then each
 * carrier's assignment and carrier item with its stale mark, one transaction per carrier, so
 * `push --behind` finds them. A carrier whose carrier item already has the version is skipped,
 * so a repeat (a held upgrade settled again, a catch-up) costs one query; the carriers go 8 at a
 * time, so a module on thousands of nodes fits in the consumer's 30 s. Upgrades of a module are
 * settled one at a time (the queue's group is `upgrade:<module>`); the module's version is read
 * again before each 8 all the same, and a pass that a newer version overtook stops there. A pass
 * stops at `until` (the consumer's time, less what its push needs) or at a throttle after some
 * carriers moved, and says `more`: the consumer sends the rest as a follow-up message, so an
 * upgrade of 50,000 carriers is several bounded passes, never one that outlives its invocation.
 * Item shapes are in mesh-items.ts.
 */
export class DynamoDBModuleVersions extends AuditedTableStore implements ModuleVersions {
  readonly #inFlight: number;

  /** `carriersInFlight` is for the upgrade bench, which compares it with one at a time. */
  constructor(options: AuditedStoreOptions & { readonly carriersInFlight?: number }) {
    super(options);
    this.#inFlight = options.carriersInFlight ?? carriersInFlight;
  }

  async setModuleVersion(
    module: string,
    version: string,
    by: Actor,
    options: {
      readonly carriers?: boolean;
      readonly until?: number;
      readonly continues?: boolean;
      readonly after?: string;
    } = {},
  ): Promise<{
    readonly carriers: readonly string[];
    readonly previous: string | null;
    readonly more: boolean;
    readonly next?: string;
    readonly overtaken?: boolean;
  }> {
    // Read first: upgrades of a module are settled one at a time (its queue group), so nothing
    // else sets it between this read and the write. A repeat finds its own version here.
    const before = await this.#versionOf(module);
    const previous = typeof before === 'string' ? before : null;
    // the rest of an upgrade that a newer one overtook: its carriers are the newer one's to move
    if (options.continues && before !== version)
      return { carriers: [], previous, more: false, overtaken: true };
    // The version set with its record; a module already at it (a held upgrade settled again, a
    // catch-up's re-announcement) records nothing, and its carriers are still moved.
    const failed = options.continues
      ? undefined
      : await this.audit.transact(
          'setting a module version',
          [
            {
              Update: {
                TableName: this.tableName,
                Key: moduleKey(module),
                UpdateExpression: 'SET version = :version',
                ConditionExpression: `${moduleKnown} AND ${notYetAtVersion}`,
                ExpressionAttributeValues: { ':version': version },
              },
            },
          ],
          {
            by,
            action: 'module.upgrade',
            subject: meshSubject,
            target: `module:${module}@${version}`,
          },
        );
    if (failed?.[0] && !failed[0].old) throw new ModuleNotFoundError(module);
    // In waves, each wave moves its own carriers: the rollout is told every carrier.
    if (options.carriers === false)
      return { carriers: await this.#carriersOf(module), previous, more: false };
    return { ...(await this.#moveFrom(module, version, options.until, options.after)), previous };
  }

  /** Strongly consistent, in the module's own partition: a node assigned a moment before is a carrier too. */
  #carriersOf(module: string): Promise<string[]> {
    return queryAll(this.client, store, {
      TableName: this.tableName,
      ...this.#carrierQuery(module),
    }).then((items) => items.map((item) => String(item.node)));
  }

  #carrierQuery(module: string) {
    return {
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :carrier)',
      ExpressionAttributeValues: { ':pk': modulePartition(module), ':carrier': carrierPrefix },
      ConsistentRead: true,
    };
  }

  /**
   * Walks the module's carriers in their order, page by page from after `after`, moving those
   * not at the version 8 at a time, until `until` or a throttle after some moved: then `more`,
   * with `next`, the last carrier passed, where the follow-up goes on. A pass reads only what it
   * walks, so the passes of an upgrade read each carrier once, however many there are.
   */
  async #moveFrom(
    module: string,
    version: string,
    until: number | undefined,
    after: string | undefined,
  ): Promise<{ readonly carriers: readonly string[]; readonly more: boolean; readonly next?: string }> {
    const walked: string[] = [];
    let moved = 0;
    let start: Record<string, unknown> | undefined =
      after === undefined ? undefined : carrierKey(module, after);
    do {
      const page = await askStore(store, () =>
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            ...this.#carrierQuery(module),
            // a pass moves about 1,700 carriers in its time: pages of this size read what it walks
            // and a page more, where 1 MB pages would read some 10,000 carriers a pass
            Limit: carriersPerPage,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        ),
      );
      start = page.LastEvaluatedKey;
      const items = page.Items ?? [];
      for (let at = 0; at < items.length; at += this.#inFlight) {
        const group = items.slice(at, at + this.#inFlight);
        const passed = () => {
          const last = walked.at(-1) ?? after;
          return { carriers: walked, more: true, ...(last === undefined ? {} : { next: last }) };
        };
        if (moved > 0) {
          // each pass moves one group at least, so a chain of follow-ups always ends
          if ((await this.#versionOf(module)) !== version) return { carriers: walked, more: false };
          if (until !== undefined && Date.parse(this.now()) >= until) return passed();
        }
        const toMove = group.filter((carrier) => carrier.version !== version).map((c) => String(c.node));
        const settled = await Promise.allSettled(
          toMove.map((node) => this.#moveCarrier(module, node, version)),
        );
        const refused = settled.find((outcome) => outcome.status === 'rejected');
        if (refused) {
          // The partition throttled (or a race lost): after some carriers moved, the rest go on
          // in a follow-up from this group; before any moved, the upgrade is held like any store
          // that cannot take it.
          moved += settled.filter((outcome) => outcome.status === 'fulfilled').length;
          if (moved === 0 || !(refused.reason instanceof StoreUnavailableError)) throw refused.reason;
          return passed();
        }
        moved += toMove.length;
        walked.push(...group.map((carrier) => String(carrier.node)));
      }
    } while (start);
    return { carriers: walked, more: false };
  }

  async moveCarriers(module: string, version: string, nodes: readonly string[]): Promise<void> {
    for (let start = 0; start < nodes.length; start += this.#inFlight)
      await Promise.all(
        nodes.slice(start, start + this.#inFlight).map((node) => this.#moveCarrier(module, node, version)),
      );
  }

  async isKnown(module: string): Promise<boolean> {
    const { Item } = await askStore(store, () =>
      this.client.send(new GetCommand({ TableName: this.tableName, Key: moduleKey(module) })),
    );
    return Item !== undefined;
  }

  /** A failed condition means there is nothing to do: no longer a carrier, or already at the version. */
  async #moveCarrier(module: string, node: string, version: string): Promise<void> {
    const atVersion = { ':version': version };
    await transact(this.client, store, [
      {
        Update: {
          TableName: this.tableName,
          Key: assignmentKey(node, module),
          UpdateExpression: 'SET version = :version',
          ConditionExpression: `${moduleAssigned} AND ${notYetAtVersion}`,
          ExpressionAttributeValues: atVersion,
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: carrierKey(module, node),
          UpdateExpression: 'SET version = :version',
          ConditionExpression: carrierStillThere,
          ExpressionAttributeValues: atVersion,
        },
      },
      ...markUpdates(this.tableName, node, this.now()),
    ]);
  }

  async #versionOf(module: string): Promise<unknown> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: moduleKey(module), ConsistentRead: true }),
      ),
    );
    return Item?.version;
  }
}
