import { createHash } from 'node:crypto';
import { deadLetterQueue } from '../../setup/resources.ts';

/** The dead-letter queue's limit on one message, body and attributes together. */
export const sqsMessageLimitBytes = deadLetterQueue.maximumMessageBytes;

/**
 * Room kept free below the limit: SQS counts an attribute's name, type and value, and we count
 * the same way, but a copy that fails on a few bytes would fail on every receive.
 */
const reserveBytes = 512;

export type MessageAttribute = { readonly DataType: string; readonly StringValue: string };

/** What SQS counts of a message's attributes toward its size. */
export function attributeBytes(attributes: Readonly<Record<string, MessageAttribute>>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(attributes)) {
    bytes +=
      Buffer.byteLength(name) + Buffer.byteLength(value.DataType) + Buffer.byteLength(value.StringValue);
  }
  return bytes;
}

/**
 * The dead-letter copy's body and the attributes it adds. A body that would not fit beside the
 * reason attributes is cut (at a character boundary) and the copy says so: `mesh.bodyBytes`
 * is the original size and `mesh.bodySha256` its SHA-256 (hex), so the original can still be
 * recognised. A body that fits is copied whole and adds nothing.
 */
export function fitDeadLetterBody(
  body: string,
  attributes: Readonly<Record<string, MessageAttribute>>,
  limitBytes: number = sqsMessageLimitBytes,
): { readonly body: string; readonly attributes: Record<string, MessageAttribute> } {
  const bytes = Buffer.from(body, 'utf8');
  if (bytes.length + attributeBytes(attributes) <= limitBytes - reserveBytes) return { body, attributes: {} };
  const added: Record<string, MessageAttribute> = {
    'mesh.bodyBytes': { DataType: 'Number', StringValue: String(bytes.length) },
    'mesh.bodySha256': { DataType: 'String', StringValue: createHash('sha256').update(bytes).digest('hex') },
  };
  const room = Math.max(0, limitBytes - reserveBytes - attributeBytes(attributes) - attributeBytes(added));
  let end = Math.min(room, bytes.length);
  // Never split a UTF-8 sequence: step back to the start of the character at the cut.
  while (end > 0 && end < bytes.length && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  const cut = bytes.subarray(0, end).toString('utf8');
  return { body: cut === '' ? '(empty)' : cut, attributes: added };
}
