import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { S3ReleaseFiles } from '../../lib/server/adapters/agent-release/s3-release-files.ts';

/**
 * The presigned PUT that S3 holds to the manifest: the SHA-256 and the length are signed headers
 * the upload must carry (S3 refuses a body whose digest is not the one named), never left out
 * or hoisted into the query where nothing would check the body against them.
 */
describe('the release bucket’s presigned transfers', () => {
  const files = new S3ReleaseFiles({
    client: new S3Client({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      requestChecksumCalculation: 'WHEN_REQUIRED',
    }),
    bucket: 'mesh-releases',
    now: () => new Date('2026-12-06T03:00:00Z'),
  });
  const sha256 = 'ab'.repeat(32);
  const manifest = { version: '1.2.0', arch: 'x64' as const, sha256, bytes: 127_000_000 };

  it('signs the upload’s SHA-256 and length as headers, for the executable’s key only', async () => {
    const upload = await files.uploadTo(manifest);
    const url = new URL(upload.url);
    expect(url.pathname).toBe(`/executables/${sha256}`);
    const signed = url.searchParams.get('X-Amz-SignedHeaders')?.split(';');
    expect(signed).toEqual(expect.arrayContaining(['content-length', 'x-amz-checksum-sha256', 'host']));
    expect(url.searchParams.has('x-amz-checksum-sha256')).toBe(false);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(upload.headers).toMatchObject({
      'content-length': '127000000',
      'x-amz-checksum-sha256': Buffer.from(sha256, 'hex').toString('base64'),
    });
    expect(upload.expiresAt).toBe('2026-12-06T03:15:00.000Z');
  });

  it('grants a download of the same key, for a quarter of an hour', async () => {
    const download = await files.downloadFrom(manifest);
    const url = new URL(download.url);
    expect(download.method).toBe('GET');
    expect(url.pathname).toBe(`/executables/${sha256}`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
  });
});
