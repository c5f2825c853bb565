import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { applyJobDriverService } from '../../lib/local/apply-job-driver.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { ApplyJob } from '../../lib/server/core/mesh-file/apply-job.ts';
import {
  sha256Of,
  UploadNotFoundError,
  uploadedFile,
  uploadPartBytes,
} from '../../lib/server/core/mesh-file/uploads.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * A mesh file too large for one request goes up in parts (docs/mesh-file.md, "Large files"):
 * `mesh apply -f` of a file over 6 MiB uploads it by itself and applies it; a part that is not
 * what it says, a part missing, or a whole that is not the file the upload was started with, is
 * refused with a 4xx before the file is read, writing nothing; an abandoned upload expires.
 */
let api: RunningApi;
let parts: LocalParts;
const folder = mkdtempSync(join(tmpdir(), 'mesh-file-uploads-'));
const mesh = (args: string[]) => runMesh(api.url, args);
const exported = async () => (await parts.meshFiles.export('yaml')).text;

/** A small mesh padded to `bytes` with one comment: a large file that costs little to check. */
const padded = (nodes: string, bytes: number) => {
  const text = `version: 1\nnodes:\n${nodes}`;
  return `${text}# ${'x'.repeat(Math.max(0, bytes - text.length - 3))}\n`;
};
const brokerAndWebs = (webs: number) =>
  [
    '  up-broker:\n    modules:\n      rabbit: {provides: amqp}\n',
    ...Array.from(
      { length: webs },
      (_, i) => `  up-web-${i + 1}:\n    modules:\n      nginx: {consumes: [up-broker/rabbit]}\n`,
    ),
  ].join('');

type Answer = {
  readonly error: { readonly code: string; readonly details?: unknown };
  readonly add: { readonly nodes: ReadonlyArray<{ readonly node: string }> };
  readonly id: string;
  readonly parts: number;
  readonly partBytes: number;
};

async function send(method: string, path: string, body: unknown) {
  const answer = await fetch(`${api.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: answer.status, body: (await answer.json()) as Answer };
}

/** An upload of `text` started, its declared digest `sha256` unless told. */
async function started(text: string, sha256 = sha256Of(text)) {
  const answer = await send('POST', '/mesh/uploads', { bytes: Buffer.byteLength(text), sha256 });
  expect(answer.status).toBe(201);
  return answer.body;
}
const partOf = (text: string, part: number) =>
  Buffer.from(text).subarray((part - 1) * uploadPartBytes, part * uploadPartBytes);
const putPart = (id: string, part: number, data: Buffer, sha256 = sha256Of(data)) =>
  send('POST', '/mesh/uploads', { upload: id, part, data: data.toString('base64'), sha256 });

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('meshuploads'));
  api = await startLocalApi({ port: 0, parts });
});

afterAll(async () => {
  await api?.stop();
});

describe('mesh files uploaded in parts', () => {
  it('mesh apply -f of a file over 6 MiB uploads it in parts, saying each, and its job applies it: the request plans nothing', async () => {
    const path = join(folder, 'big.yaml');
    const text = padded(brokerAndWebs(3), 6.5 * 1024 * 1024);
    writeFileSync(path, text);
    const driver = await applyJobDriverService.start(parts);
    try {
      const applied = await mesh(['--json', 'apply', '-f', path]);
      expect(applied.code).toBe(ExitCode.ok);
      expect(applied.output).toContain('"code":"upload.part"');
      expect(applied.output).toContain('"part":3,"parts":3');
      const job = JSON.parse(applied.stdout) as ApplyJob;
      expect(job).toMatchObject({ state: 'done', parts: 1, progress: { touched: 4 } });
      expect(job.plan.counts).toMatchObject({ 'add.nodes': 4, 'add.modules': 4, 'add.relations': 3 });
      expect(job.plan.revision).not.toBe('');
    } finally {
      await driver.stop();
    }
    expect(await exported()).toContain('up-web-3');
  });

  it('refuses a part whose bytes are not what it says, and an apply naming an upload with a part missing, writing nothing', async () => {
    const text = padded(brokerAndWebs(1).replaceAll('up-', 'missing-'), uploadPartBytes + 1000);
    const upload = await started(text);
    expect(upload.parts).toBe(2);
    const tampered = Buffer.from(partOf(text, 1));
    const original = sha256Of(tampered);
    tampered[20] = 0x7a;
    const refused = await putPart(upload.id, 1, tampered, original);
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('part_digest_mismatch');
    expect((await putPart(upload.id, 2, partOf(text, 2))).status).toBe(200);
    const before = await exported();
    const incomplete = await send('POST', '/mesh/apply', { upload: upload.id });
    expect(incomplete.status).toBe(409);
    expect(incomplete.body.error.code).toBe('upload_incomplete');
    expect(incomplete.body.error.details).toEqual({ missing: [1], missingCount: 1 });
    expect((await send('POST', '/mesh/plan', { upload: upload.id })).body.error.code).toBe(
      'upload_incomplete',
    );
    expect(await parts.applyJobs.running()).toBeUndefined();
    expect(await exported()).toBe(before);
    // a part sent again with other bytes is refused; the same bytes again are taken
    const other = Buffer.alloc(partOf(text, 2).length, 'y');
    expect((await putPart(upload.id, 2, other)).body.error.code).toBe('part_differs');
    expect((await putPart(upload.id, 1, partOf(text, 1))).status).toBe(200);
    expect((await putPart(upload.id, 1, partOf(text, 1))).status).toBe(200);
    const planned = await send('POST', '/mesh/plan', { upload: upload.id });
    expect(planned.status).toBe(200);
    expect(planned.body.add.nodes.map((n) => n.node)).toEqual(['missing-broker', 'missing-web-1']);
    expect(await exported()).toBe(before);
  });

  it('refuses an upload whose whole is not the file it was started with, and a prune naming one on the operator’s route', async () => {
    const text = padded(brokerAndWebs(1).replaceAll('up-', 'other-'), 1000);
    const short = await started(`${text}#`);
    const size = await putPart(short.id, 1, partOf(text, 1));
    expect(size.status).toBe(400);
    expect(size.body.error.code).toBe('bad_part');
    const declared = await started(text, sha256Of('another file'));
    expect((await putPart(declared.id, 1, partOf(text, 1))).status).toBe(200);
    const mismatch = await send('POST', '/mesh/apply', { upload: declared.id });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error.code).toBe('upload_digest_mismatch');
    const good = await started(text);
    expect((await putPart(good.id, 1, partOf(text, 1))).status).toBe(200);
    const prune = await send('POST', '/mesh/apply', { upload: good.id, prune: true });
    expect(prune.status).toBe(403);
    expect(prune.body.error.code).toBe('prune_needs_admin');
    const both = await send('POST', '/mesh/apply', { upload: good.id, file: text });
    expect(both.status).toBe(400);
    expect(await parts.applyJobs.running()).toBeUndefined();
    expect(await exported()).not.toContain('other-broker');
  });

  it('an abandoned upload expires: its items carry the table’s TTL, and past its time it is not found', async () => {
    const text = padded('', 100);
    const upload = await started(text);
    expect((await putPart(upload.id, 1, partOf(text, 1))).status).toBe(200);
    const found = await parts.meshUploads.read(upload.id);
    const expiresAt = found?.upload.expiresAt as number;
    expect(expiresAt * 1000 - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(await uploadedFile({ meshUploads: parts.meshUploads }, upload.id, localActor())).toBe(text);
    const later = { meshUploads: parts.meshUploads, now: () => new Date(expiresAt * 1000 + 1) };
    await expect(uploadedFile(later, upload.id, localActor())).rejects.toThrow(UploadNotFoundError);
    await expect(uploadedFile(later, upload.id, localActor())).rejects.toThrow(/has expired/);
    const stranger = { ...localActor(), principal: 'arn:aws:iam::1:user/someone-else' };
    await expect(uploadedFile({ meshUploads: parts.meshUploads }, upload.id, stranger)).rejects.toThrow(
      /no upload/,
    );
  });
});
