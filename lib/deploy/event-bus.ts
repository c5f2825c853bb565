import { EventBus, Rule } from 'aws-cdk-lib/aws-events';
import { SnsTopic } from 'aws-cdk-lib/aws-events-targets';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { eventSource } from '../server/adapters/events/eventbridge-sink.ts';
import { eventsNeedingAttention } from '../server/core/events/events.ts';
import { acknowledge } from './nag.ts';

export type MeshEventBusProps = {
  /**
   * An address mailed the events a person has to act on (`-c eventsEmail=ADDRESS`: a rule on the
   * bus to a topic of its own, subscribed by email). Without one the bus has no rule: add yours
   * (docs/events.md).
   */
  readonly email?: string;
};

/**
 * The stack's own EventBridge bus, where the functions that tell of a change put its event
 * (docs/events.md): its name is in their environment (`MESH_EVENT_BUS_NAME`) and only they may
 * put on it (MeshFunctions.connectEvents). A bus of its own keeps Mesh's events and their rules
 * apart from the account's default bus.
 */
export class MeshEventBus extends Construct {
  public readonly bus: EventBus;
  /** The topic the `email` rule mails through, when an address is given. */
  public readonly emailTopic: Topic | undefined;

  constructor(scope: Construct, id: string, props: MeshEventBusProps = {}) {
    super(scope, id);
    this.bus = new EventBus(this, 'Bus', {
      description: "mesh: the control plane's events (docs/events.md)",
    });
    if (!props.email) {
      this.emailTopic = undefined;
      return;
    }
    this.emailTopic = new Topic(this, 'EmailTopic', { displayName: 'mesh events', enforceSSL: true });
    this.emailTopic.addSubscription(new EmailSubscription(props.email));
    new Rule(this, 'EmailRule', {
      eventBus: this.bus,
      description: 'the events a person has to act on, mailed',
      eventPattern: { source: [eventSource], detailType: [...eventsNeedingAttention] },
      targets: [new SnsTopic(this.emailTopic)],
    });
    acknowledge(this.emailTopic, {
      id: 'AwsSolutions-SNS2',
      reason:
        "EventBridge publishes to a topic encrypted with AWS's own SNS key only if the key lets it, which that key's fixed policy does not; an event carries names and counts, never a secret",
    });
  }
}
