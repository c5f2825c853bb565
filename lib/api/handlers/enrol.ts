import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { type EnrolDeps, enrol } from '../../core/enrolment/enrol.ts';
import { publicKeys } from '../../core/enrolment/keys.ts';
import { tokenString } from '../../core/enrolment/token.ts';
import { nodeName } from '../../core/names.ts';
import { json, parseBody } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { enrolmentProblem } from './enrol-problems.ts';

export const enrolBody = z.object({ node: nodeName, token: tokenString, keys: publicKeys }).strict();
export type EnrolBody = z.infer<typeof enrolBody>;

/** The answer to a successful enrolment; the same for a presenter asking again after the spend. */
export type EnrolAnswer = { readonly node: string; readonly thumbprint: string; readonly enrolledAt: string };

/** `POST /enrol` (auth 'token'): see lib/core/enrolment/enrol.ts for the protocol. */
export function createEnrolHandler(deps: EnrolDeps) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: enrolmentProblem }))
    .handler(async function enrolNode(event) {
      const body = parseBody(event, enrolBody);
      const enrolled = await enrol(body, deps);
      const answer: EnrolAnswer = {
        node: enrolled.node,
        thumbprint: enrolled.thumbprint,
        enrolledAt: enrolled.enrolledAt,
      };
      return json(200, answer);
    });
}
