import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  attributeBytes,
  fitDeadLetterBody,
  sqsMessageLimitBytes,
} from '../../lib/server/adapters/control/dead-letter-body.ts';

const reasons = {
  'mesh.deadLetter': { DataType: 'String', StringValue: 'malformed' },
  'mesh.reason': { DataType: 'String', StringValue: `oversize: ${'x'.repeat(900)}` },
  'mesh.messageId': { DataType: 'String', StringValue: '5b3c1f0e-9d7a-4a36-8a55-0c3d5f1f2e11' },
  'mesh.receiveCount': { DataType: 'Number', StringValue: '1' },
};

const sizeOf = (fitted: ReturnType<typeof fitDeadLetterBody>) =>
  Buffer.byteLength(fitted.body) + attributeBytes({ ...reasons, ...fitted.attributes });

describe("the dead-letter copy's body", () => {
  it('is copied whole, adding nothing, when it fits beside the reasons', () => {
    const body = JSON.stringify({ type: 'report', pad: 'y'.repeat(64 * 1024) });
    expect(fitDeadLetterBody(body, reasons)).toEqual({ body, attributes: {} });
  });

  it('is cut to fit under the SQS limit when body and reasons would not, keeping size and digest', () => {
    // Prepare: a body that alone fits SQS, but not with the reason attributes beside it.
    const body = 'z'.repeat(sqsMessageLimitBytes - 100);
    // Act
    const fitted = fitDeadLetterBody(body, reasons);
    // Assess
    expect(sizeOf(fitted)).toBeLessThanOrEqual(sqsMessageLimitBytes);
    expect(body.startsWith(fitted.body)).toBe(true);
    expect(fitted.body.length).toBeGreaterThan(sqsMessageLimitBytes - 2048);
    expect(fitted.attributes).toEqual({
      'mesh.bodyBytes': { DataType: 'Number', StringValue: String(sqsMessageLimitBytes - 100) },
      'mesh.bodySha256': {
        DataType: 'String',
        StringValue: createHash('sha256').update(body).digest('hex'),
      },
    });
  });

  it('is cut at a character boundary, never inside a multi-byte character', () => {
    for (const shift of [0, 1, 2]) {
      const body = `${'a'.repeat(shift)}${'€'.repeat(sqsMessageLimitBytes / 3)}`;
      const fitted = fitDeadLetterBody(body, reasons);
      expect(fitted.body).not.toContain('\uFFFD');
      expect(body.startsWith(fitted.body)).toBe(true);
      expect(sizeOf(fitted)).toBeLessThanOrEqual(sqsMessageLimitBytes);
    }
  });

  it('honours a smaller limit', () => {
    const fitted = fitDeadLetterBody('q'.repeat(4000), reasons, 2048);
    expect(sizeOf(fitted)).toBeLessThanOrEqual(2048);
    expect(fitted.attributes['mesh.bodyBytes']?.StringValue).toBe('4000');
  });
});
