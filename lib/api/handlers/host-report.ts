import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { envelope, reportBody } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import { nodeName } from '../../core/names.ts';
import { authenticatedNode, hostAuthentication } from '../host-auth.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { Problem } from '../problem.ts';
import { mapControlError, queueOne } from './control-queueing.ts';

export const reportRequest = reportBody.omit({ node: true });

export type HostReportDeps = {
  readonly sender: ControlSender;
  /** @default hostAuthentication() against the configured tables */
  readonly authentication?: MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult>;
  readonly now?: () => Date;
};

/**
 * POST /hosts/{node}/reports (host): a host's report, put on the control queue under
 * `report:<node>`. The deduplication id is the node and its sequence, so a host that sends the
 * same report again (its answer lost) queues it once.
 */
export function createHostReportHandler(deps: HostReportDeps) {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: mapControlError }))
    .use(deps.authentication ?? hostAuthentication({ replay: 'proof-id-while-store-answers' }))
    .handler(async (event) => {
      const { node } = validate(z.object({ node: nodeName }), event.pathParameters ?? {}, 'path');
      if (authenticatedNode(event) !== node) {
        throw new Problem(403, 'wrong_node', `this host may only report for itself, not ${node}`);
      }
      const body = { node, ...parseBody(event, reportRequest) };
      const queued = await queueOne(deps.sender, {
        message: envelope('report', body, now()),
        deduplicationId: `report-${node}-${body.sequence}`,
      });
      return json(202, { queued });
    });
}
