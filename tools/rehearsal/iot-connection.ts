import type { Decision } from './iam-check.ts';
import type { PolicyDocument } from './iam-policies.ts';
import type { ConnectAnswer } from './iot-answers.ts';
import { topicMatches } from './iot-model.ts';

/** One message through the broker: a data plane Publish, or an IoT lifecycle event. */
export type IotMessage = {
  readonly topic: string;
  readonly payload: Buffer;
  readonly qos: number;
  readonly retain: boolean;
  /** Who published it: a function of the stack, or IoT itself. */
  readonly publisher: string;
};

/** What a connection asks of the broker that accepted it. */
export type ConnectionBroker = {
  judge(connection: IotConnection, action: string, resource: string): Promise<Decision>;
  retainedMessages(): IotMessage[];
  closed(connection: IotConnection, version: number): void;
};

/**
 * A connection IoT accepted: the policies its authorizer answered decide what it may subscribe
 * to and receive, as on AWS; it keeps what it received.
 */
export class IotConnection {
  readonly clientId: string;
  readonly principalId: string;
  readonly policies: readonly PolicyDocument[];
  readonly received: IotMessage[] = [];
  readonly #broker: ConnectionBroker;
  readonly #filters: string[] = [];
  readonly #version: number;
  #open = true;

  constructor(broker: ConnectionBroker, answer: ConnectAnswer & { clientId: string; version: number }) {
    this.#broker = broker;
    this.clientId = answer.clientId;
    this.principalId = answer.principalId;
    this.policies = answer.policies;
    this.#version = answer.version;
  }

  /** Whether the connection's policies allow `action` on `<kind>/<name>` (`topicfilter/mesh/nodes/a/*`). */
  async allows(action: string, resource: string): Promise<boolean> {
    const decision = await this.#broker.judge(this, action, resource);
    return decision.allowed;
  }

  /** Subscribes if iot:Subscribe allows the filter; retained messages it may receive arrive at once. */
  async subscribe(filter: string): Promise<boolean> {
    if (!this.#open || !(await this.allows('iot:Subscribe', `topicfilter/${filter}`))) return false;
    this.#filters.push(filter);
    for (const message of this.#broker.retainedMessages())
      if (topicMatches(filter, message.topic)) await this.deliver(message);
    return true;
  }

  /** Hands a message on if it matches a subscription and iot:Receive allows its topic. */
  async deliver(message: IotMessage): Promise<void> {
    if (!this.#open || !this.#filters.some((filter) => topicMatches(filter, message.topic))) return;
    if (await this.allows('iot:Receive', `topic/${message.topic}`)) this.received.push(message);
  }

  disconnect(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#broker.closed(this, this.#version);
  }
}
