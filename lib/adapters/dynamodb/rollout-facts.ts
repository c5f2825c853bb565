import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Facts, NodeFacts } from '../../core/rollout/advance.ts';
import type { RolloutFacts } from '../../core/rollout/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { enrolmentItemKey, nodePartition, presenceItemKey, reportItemKey } from './keys.ts';
import { deliveryKey } from './mesh-items.ts';
import { type Item, TableStore } from './requests.ts';

const store = 'the inventory table';
/** BatchGetItem takes 100 keys. */
const keysPerBatch = 100;
const unprocessedRounds = 8;

/**
 * What a rollout waits on, read from the items other areas keep in each node's partition: the
 * control area's `report` (report-store.ts: state, revision, step, appliedRevision), the signal's
 * `presence` (presence-store.ts: online), the enrolment's `enrolment` (token-store.ts: present
 * once an enrolment completed) and the mesh's `delivery` (its sent revision). Strongly
 * consistent BatchGetItem, 100 keys a request, with what the store left unprocessed asked again.
 */
export class DynamoDBRolloutFacts extends TableStore implements RolloutFacts {
  async of(nodes: readonly string[]): Promise<Facts> {
    const items = await this.#get(
      nodes.flatMap((node) => [reportItemKey(node), presenceItemKey(node), enrolmentItemKey(node)]),
    );
    return new Map(
      nodes.map((node) => {
        const facts = factsOf(
          items.get(`${nodePartition(node)}|report`),
          items.get(`${nodePartition(node)}|presence`),
        );
        // a node still here with no completed enrolment has no host to answer for it
        const enrolled = items.get(`${nodePartition(node)}|enrolment`) !== undefined;
        return [node, enrolled ? facts : { ...facts, enrolled: false }];
      }),
    );
  }

  async revisions(nodes: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const items = await this.#get(nodes.map((node) => deliveryKey(node)));
    const revisions = new Map<string, number>();
    for (const node of nodes) {
      const delivery = items.get(`${nodePartition(node)}|delivery`);
      if (delivery && typeof delivery.revision === 'number') revisions.set(node, delivery.revision);
    }
    return revisions;
  }

  async #get(keys: ReadonlyArray<{ pk: string; sk: string }>): Promise<Map<string, Item>> {
    const found = new Map<string, Item>();
    for (let at = 0; at < keys.length; at += keysPerBatch) {
      let pending: Array<Record<string, unknown>> = keys.slice(at, at + keysPerBatch);
      for (let round = 0; pending.length > 0; round += 1) {
        if (round === unprocessedRounds)
          throw new StoreUnavailableError(`reading ${pending.length} nodes' reports`, {
            cause: new Error('left unprocessed'),
          });
        const answer = await askStore(store, () =>
          this.client.send(
            new BatchGetCommand({
              RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
            }),
          ),
        );
        for (const item of answer.Responses?.[this.tableName] ?? []) found.set(`${item.pk}|${item.sk}`, item);
        pending = answer.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return found;
  }
}

/**
 * A report answers for the revision it names when its state is applied or failed; a report of
 * something newer applying still answers `applied` for what it applied before (appliedRevision).
 */
function factsOf(report: Item | undefined, presence: Item | undefined): NodeFacts {
  const online = typeof presence?.online === 'boolean' ? { online: presence.online } : {};
  if (!report) return online;
  const state = report.state;
  const revision = typeof report.revision === 'number' ? report.revision : 0;
  if (state === 'applied' || state === 'failed')
    return {
      ...online,
      report: { revision, state, step: typeof report.step === 'string' ? report.step : undefined },
    };
  if (typeof report.appliedRevision === 'number')
    return { ...online, report: { revision: report.appliedRevision, state: 'applied' } };
  return { ...online, report: { revision, state: 'applying' } };
}
