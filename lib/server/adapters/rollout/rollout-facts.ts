import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Facts, NodeFacts } from '../../core/rollout/advance.ts';
import type { RolloutFacts } from '../../core/rollout/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import {
  enrolmentItemKey,
  healthItemKey,
  nodePartition,
  presenceItemKey,
  reportItemKey,
} from '../dynamodb/keys.ts';
import { deliveryKey } from '../dynamodb/mesh-items.ts';
import { type Item, TableStore } from '../dynamodb/requests.ts';
import { healthOf } from '../views/status-reader.ts';
import { unhealthyView } from '../views/view-lists.ts';
import { claimPartition } from './rollout-claims.ts';

const store = 'the inventory table';
/** BatchGetItem takes 100 keys. */
const keysPerBatch = 100;
const unprocessedRounds = 8;
/**
 * The unhealthy nodes a step looks at beyond its wave: the first this many of gsi2's unhealthy
 * list, by name. A mesh with more unhealthy nodes at once than this has those past it found
 * only when their own wave is in flight (docs/decisions/rollouts-in-waves.md, "Health").
 */
export const unhealthyScanned = 1000;

/**
 * What a rollout waits on, read from the items other areas keep in each node's partition: the
 * control area's `report` (report-store.ts: state, revision, step, appliedRevision) and `health`
 * (health-items.ts), the signal's `presence` (presence-store.ts: online), the enrolment's
 * `enrolment` (token-store.ts: present once an enrolment completed) and the mesh's `delivery`
 * (its sent revision). Strongly consistent BatchGetItem, 100 keys a request, with what the store
 * left unprocessed asked again. Beside the nodes asked for, the nodes on the unhealthy list (gsi2
 * `view#unhealthy`, eventually consistent, up to `unhealthyScanned`) with their health and their
 * rollout claim (rollout-claims.ts): the rollout holding one sees it turn unhealthy in a wave that
 * is done, without reading that wave's nodes.
 */
export class DynamoDBRolloutFacts extends TableStore implements RolloutFacts {
  async of(nodes: readonly string[]): Promise<Facts> {
    const asked = new Set(nodes);
    const unhealthy = (await this.#unhealthy()).filter((node) => !asked.has(node));
    const items = await this.#get([
      ...nodes.flatMap((node) => [
        reportItemKey(node),
        presenceItemKey(node),
        healthItemKey(node),
        enrolmentItemKey(node),
      ]),
      ...unhealthy.flatMap((node) => [healthItemKey(node), { pk: claimPartition(node), sk: 'claim' }]),
    ]);
    const item = (node: string, sk: string) => items.get(`${nodePartition(node)}|${sk}`);
    const facts = new Map<string, NodeFacts>(
      nodes.map((node) => [
        node,
        {
          ...factsOf(item(node, 'report'), item(node, 'presence')),
          ...healthFacts(item(node, 'health')),
          // a node still here with no completed enrolment has no host to answer for it
          ...(item(node, 'enrolment') === undefined ? { enrolled: false } : {}),
        },
      ]),
    );
    for (const node of unhealthy) {
      const claim = items.get(`${claimPartition(node)}|claim`);
      const health = healthFacts(item(node, 'health'));
      if (!health.health || typeof claim?.rollout !== 'string' || typeof claim.wave !== 'number') continue;
      facts.set(node, { ...health, heldBy: { rollout: claim.rollout, wave: claim.wave } });
    }
    return facts;
  }

  /** The first names of the unhealthy list: one Query of keys, a page of at most `unhealthyScanned`. */
  async #unhealthy(): Promise<string[]> {
    const page = await askStore(store, () =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'gsi2',
          KeyConditionExpression: 'gsi2pk = :view',
          ExpressionAttributeValues: { ':view': unhealthyView },
          Limit: unhealthyScanned,
        }),
      ),
    );
    return (page.Items ?? []).map((found) => String(found.gsi2sk));
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

/** A node's health as a rollout judges it; nothing when its host reported none. */
function healthFacts(item: Item | undefined): Pick<NodeFacts, 'health'> {
  const health = healthOf(item);
  if (!health) return {};
  return {
    health: {
      state: health.state,
      check: health.check,
      revision: health.revision,
      ...(health.reason === null ? {} : { reason: health.reason }),
      ...(health.state === 'unhealthy' && health.since !== null ? { unhealthySince: health.since } : {}),
    },
  };
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
