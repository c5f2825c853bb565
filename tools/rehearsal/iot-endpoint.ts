import { createHash } from 'node:crypto';

/**
 * The account's IoT data endpoint in the rehearsal: `<prefix>-ats.iot.<region>.aws.localhost`,
 * shaped like AWS's (`<prefix>-ats.iot.<region>.amazonaws.com`), a bare host whose port is 443,
 * as hosts and the IoT data plane client take it. Names under `.localhost` resolve to the
 * loopback, and the sandboxes take port 443 of `*.aws.localhost` to the rehearsal's HTTPS port.
 */
export const iotDataHostOf = (stackName: string, region: string) =>
  `${createHash('sha256').update(`${stackName}/iot-data`).digest('hex').slice(0, 14)}-ats.iot.${region}.aws.localhost`;

/** Where CloudFormation's custom resource responses are PUT (AWS presigns an S3 URL; the rehearsal listens itself). */
export const cloudFormationResponsesHost = 'cloudformation-responses.aws.localhost';

/** Every name the rehearsal answers on HTTPS, for its certificate. */
export const httpsNamesOf = (iotDataHost: string) => [iotDataHost, cloudFormationResponsesHost];

/**
 * IoT's DescribeEndpoint as the rehearsal answers it: the ATS data endpoint only (the legacy
 * VeriSign `iot:Data` endpoint, the credentials provider and jobs are not served).
 */
export function describeEndpoint(
  endpointType: string | undefined,
  iotDataHost: string,
): { readonly endpointAddress: string } | undefined {
  return endpointType === 'iot:Data-ATS' ? { endpointAddress: iotDataHost } : undefined;
}
