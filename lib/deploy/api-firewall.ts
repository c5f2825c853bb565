import type { Stage } from 'aws-cdk-lib/aws-apigateway';
import { CfnWebACL, CfnWebACLAssociation } from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import {
  defaultFirewallLimits,
  enrolPathPattern,
  firewallRetryAfterSeconds,
  firewallWindowSeconds,
  throttledBody,
} from './firewall-limits.ts';
import { throwIfProblems } from './names.ts';

export type ApiFirewallLimits = {
  /**
   * Requests one address may send to `POST /enrol` in five minutes, refused ones counted too.
   * One host's enrolment is one request, a few more while told "try again"; hosts behind one NAT
   * address share this (docs/deploy.md: a fleet behind NAT).
   * @default 500
   */
  readonly enrolPerAddress?: number;
  /**
   * Requests one address may send to the whole API in five minutes. A fleet behind one NAT
   * address shares this: raise it to a few requests per node per push.
   * @default 10000
   */
  readonly requestsPerAddress?: number;
};

export type ApiFirewallProps = ApiFirewallLimits & {
  /** The API stage the web ACL guards. */
  readonly stage: Stage;
};

/** The window AWS WAF counts an address's requests over, and the limits it takes. */
const windowSeconds = firewallWindowSeconds;
const smallestLimit = 10;
const largestLimit = 2_000_000_000;
const retryAfterSeconds = firewallRetryAfterSeconds;

const limitProblems = (name: string, limit: number) =>
  Number.isInteger(limit) && limit >= smallestLimit && limit <= largestLimit
    ? []
    : [
        `${name} must be a whole number from ${smallestLimit} to ${largestLimit} (requests per address in ${windowSeconds / 60} minutes)`,
      ];

/**
 * Per-address protection in front of the API: an AWS WAF web ACL on the stage with two
 * rate-based rules, one on `POST /enrol` (so one client cannot keep the token route's budget
 * empty for every real host) and one on every route (so one address cannot spend a kind of
 * caller's budget alone). An address over a limit is answered 429 in the problem shape with
 * Retry-After, which `mesh` and `mesh-host` take as "try again", until its count over the last
 * five minutes falls under the limit. Costs (us-east-1 list prices): $5 a month for the web
 * ACL, $1 per rule (2), $0.60 per million requests inspected; docs/deploy.md has the figures.
 */
export class ApiFirewall extends Construct {
  public readonly webAcl: CfnWebACL;

  constructor(scope: Construct, id: string, props: ApiFirewallProps) {
    super(scope, id);
    const enrolPerAddress = props.enrolPerAddress ?? defaultFirewallLimits.enrolPerAddress;
    const requestsPerAddress = props.requestsPerAddress ?? defaultFirewallLimits.requestsPerAddress;
    throwIfProblems('ApiFirewall', [
      ...limitProblems('enrolPerAddress', enrolPerAddress),
      ...limitProblems('requestsPerAddress', requestsPerAddress),
    ]);

    const visibility = (metricName: string): CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      sampledRequestsEnabled: true,
      metricName,
    });
    const blocked: CfnWebACL.RuleActionProperty = {
      block: {
        customResponse: {
          responseCode: 429,
          customResponseBodyKey: 'throttled',
          responseHeaders: [{ name: 'Retry-After', value: String(retryAfterSeconds) }],
        },
      },
    };
    const perAddress = (limit: number) => ({
      limit,
      evaluationWindowSec: windowSeconds,
      aggregateKeyType: 'IP',
    });

    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      scope: 'REGIONAL',
      description: 'mesh control plane: requests per address',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('mesh-api'),
      customResponseBodies: {
        throttled: { contentType: 'APPLICATION_JSON', content: throttledBody(retryAfterSeconds) },
      },
      rules: [
        {
          name: 'enrol-per-address',
          priority: 0,
          action: blocked,
          visibilityConfig: visibility('mesh-enrol-per-address'),
          statement: {
            rateBasedStatement: {
              ...perAddress(enrolPerAddress),
              // the stage prefix and any base path come first; a trailing slash reaches the route too
              scopeDownStatement: {
                regexMatchStatement: {
                  regexString: enrolPathPattern,
                  fieldToMatch: { uriPath: {} },
                  textTransformations: [{ priority: 0, type: 'NONE' }],
                },
              },
            },
          },
        },
        {
          name: 'requests-per-address',
          priority: 1,
          action: blocked,
          visibilityConfig: visibility('mesh-requests-per-address'),
          statement: { rateBasedStatement: perAddress(requestsPerAddress) },
        },
      ],
    });
    new CfnWebACLAssociation(this, 'Association', {
      resourceArn: props.stage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });
  }
}
