import { type CodedLine, codedLine, type LineFormat, printedLine, say } from '../server/core/coded-lines.ts';

/** What `npm start` prints (docs/codes.md); people see each after `mesh: `. */
export const runtimeLines = {
  settingRefused: codedLine<{ readonly variable: string; readonly problem: string }>(
    'runtime.setting-refused',
    'error',
    ({ problem }) => problem,
  ),
  starting: codedLine<{ readonly step: string }>('runtime.starting', 'info', ({ step }) => step),
  ready: codedLine<{ readonly url: string; readonly seconds: number }>(
    'runtime.ready',
    'info',
    ({ url, seconds }) => `control plane ready in ${seconds.toFixed(1)} s at ${url}`,
  ),
  data: codedLine<{ readonly dir: string | undefined }>(
    'runtime.data',
    'info',
    ({ dir }) => `data kept in ${dir}`,
  ),
  stores: codedLine<{
    readonly dynamodb: string;
    readonly dynamodbEmulated: boolean;
    readonly sqs: string;
    readonly sqsEmulated: boolean;
  }>(
    'runtime.stores',
    'info',
    (at) =>
      `DynamoDB ${at.dynamodbEmulated ? 'Local' : 'given'} at ${at.dynamodb}, SQS ${at.sqsEmulated ? '(fauxqs)' : 'given'} at ${at.sqs}`,
  ),
  broker: codedLine<{ readonly url: string }>(
    'runtime.broker',
    'info',
    ({ url }) => `hosts wait for their signal on the embedded MQTT broker at ${url}`,
  ),
  howToStop: codedLine('runtime.how-to-stop', 'info', () => 'press Ctrl-C to stop'),
  stopping: codedLine<{ readonly signal: string }>(
    'runtime.stopping',
    'info',
    ({ signal }) => `${signal} received, stopping`,
  ),
  stopped: codedLine('runtime.stopped', 'info', () => 'stopped'),
  failed: codedLine<{ readonly error: string; readonly reason: string }>(
    'runtime.failed',
    'error',
    ({ reason }) => reason,
  ),
  brokerAuthorizerFailed: codedLine<{ readonly reason: string }>(
    'broker.authorizer-failed',
    'warn',
    () => 'the broker authorizer failed; connect refused',
  ),
  brokerPresenceNotRecorded: codedLine<{ readonly client: string; readonly reason: string }>(
    'broker.presence-not-recorded',
    'warn',
    ({ client }) => `presence of ${client} not recorded`,
  ),
} as const;

/** Prints one of the runtime's lines on `stream`: after `mesh: ` for people, or one JSON line. */
export function runtimePrinter(format: LineFormat) {
  return <Fields extends object>(
    stream: NodeJS.WritableStream,
    line: CodedLine<Fields>,
    fields: Fields,
  ): void => {
    stream.write(printedLine(say(line, fields), format, 'mesh: '));
  };
}
