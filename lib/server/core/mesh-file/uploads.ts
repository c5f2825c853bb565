import { createHash, randomBytes } from 'node:crypto';
import type { Actor } from '../audit/record.ts';
import { MeshError } from '../mesh/errors.ts';
import type { ApplyPlan } from './plan.ts';
import type { LiveMeshReading } from './ports.ts';
import { meshFileMaxBytes } from './read.ts';
import type { MeshFileService, PlanRequest } from './service.ts';

/**
 * A mesh file too large for one request goes up in parts (docs/mesh-file.md, "Large files";
 * docs/decisions/mesh-file-uploads.md): `POST /mesh/uploads` says its size and SHA-256, each
 * part goes up with its own SHA-256, and a plan or an apply names the upload instead of carrying
 * the file. The parts are checked as they come and the whole when it is named, so a part that was
 * tampered with, or one missing, is refused before anything reads the file.
 */
export type MeshUpload = {
  readonly id: string;
  /** The file's size in bytes (UTF-8) and its SHA-256 (hex), as the uploader declared them. */
  readonly bytes: number;
  readonly sha256: string;
  /** How many parts the file is cut into, each `uploadPartBytes` but the last. */
  readonly parts: number;
  /** Who uploads: only they send its parts and name it (another caller is told there is none). */
  readonly by: string;
  readonly createdAt: string;
  /** Epoch seconds: after it the upload is gone (the table's TTL takes its items). */
  readonly expiresAt: number;
};

/** One part as received: its number (from 1), its size and SHA-256. */
export type UploadedPart = { readonly part: number; readonly bytes: number; readonly sha256: string };

/**
 * A part's bytes at most: its body carries them base64-encoded (4 MiB), which JSON never escapes,
 * so a part's request is 4 MiB and about 100 bytes whatever the file holds, under Lambda's 6 MB
 * with the API Gateway event around it.
 */
export const uploadPartBytes = 3 * 1024 * 1024;
/** A part's request body at most: the base64 of a whole part and the JSON around it. */
export const uploadPartBodyBytes = (uploadPartBytes / 3) * 4 + 1024;
/** The largest file an upload takes: the largest file (read.ts). */
export const uploadMaxBytes = meshFileMaxBytes;
/** An upload not applied within this long is abandoned: its items expire. */
export const uploadLifetimeSeconds = 24 * 3600;

export const uploadIdPattern = /^[0-9a-f]{32}$/;
export const sha256Pattern = /^[0-9a-f]{64}$/;
export const sha256Of = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export interface MeshUploadStore {
  create(upload: MeshUpload): Promise<void>;
  /** The upload and the parts received so far, read strongly; undefined when there is none. */
  read(
    id: string,
  ): Promise<{ readonly upload: MeshUpload; readonly parts: readonly UploadedPart[] } | undefined>;
  /**
   * Keeps one part, all of it or none: only while the upload is there, and only if the part is
   * not there already with other bytes (PartDiffersError); the same bytes again write nothing new.
   */
  putPart(upload: MeshUpload, part: UploadedPart, data: Buffer): Promise<void>;
  /** The parts' bytes in order, each as kept (the caller checks them against their SHA-256). */
  partData(upload: MeshUpload, parts: readonly UploadedPart[]): Promise<readonly Buffer[]>;
}

/** A control plane wired without uploads (a test of one route) finds none. */
export type UploadDeps = { readonly meshUploads?: MeshUploadStore; readonly now?: () => Date };
const nowOf = (deps: UploadDeps) => deps.now?.() ?? new Date();
const storeOf = (deps: UploadDeps, id: string) => {
  if (!deps.meshUploads) throw new UploadNotFoundError(id);
  return deps.meshUploads;
};

const partsOf = (bytes: number) => Math.max(1, Math.ceil(bytes / uploadPartBytes));

/** `POST /mesh/uploads`: an upload of `bytes` bytes with this SHA-256, its parts to follow. */
export async function startUpload(
  deps: UploadDeps,
  request: { readonly bytes: number; readonly sha256: string; readonly by: Actor },
): Promise<MeshUpload & { readonly partBytes: number }> {
  if (request.bytes > uploadMaxBytes) throw new UploadTooLargeError(request.bytes);
  const now = nowOf(deps);
  const upload: MeshUpload = {
    id: randomBytes(16).toString('hex'),
    bytes: request.bytes,
    sha256: request.sha256,
    parts: partsOf(request.bytes),
    by: request.by.principal,
    createdAt: now.toISOString(),
    expiresAt: Math.floor(now.getTime() / 1000) + uploadLifetimeSeconds,
  };
  await storeOf(deps, upload.id).create(upload);
  return { ...upload, partBytes: uploadPartBytes };
}

/** The upload, when it is there, not expired and the caller's; UploadNotFoundError otherwise. */
async function uploadOf(deps: UploadDeps, id: string, by: Actor) {
  const store = storeOf(deps, id);
  const found = await store.read(id);
  if (!found || found.upload.by !== by.principal) throw new UploadNotFoundError(id);
  if (found.upload.expiresAt * 1000 <= nowOf(deps).getTime()) throw new UploadNotFoundError(id, true);
  return { ...found, store };
}

/** A part (`POST /mesh/uploads` with `{upload, part, data, sha256}`): kept only when its bytes are what it says. */
export async function putUploadPart(
  deps: UploadDeps,
  request: {
    readonly id: string;
    readonly part: number;
    readonly data: Buffer;
    readonly sha256: string;
    readonly by: Actor;
  },
): Promise<{
  readonly id: string;
  readonly part: number;
  readonly received: number;
  readonly parts: number;
}> {
  const { upload, parts, store } = await uploadOf(deps, request.id, request.by);
  if (request.part > upload.parts) throw new UploadPartOutOfRangeError(request.part, upload.parts);
  const expected =
    request.part < upload.parts ? uploadPartBytes : upload.bytes - (upload.parts - 1) * uploadPartBytes;
  if (request.data.length !== expected)
    throw new UploadPartSizeError(request.part, request.data.length, expected);
  const actual = sha256Of(request.data);
  if (actual !== request.sha256) throw new UploadPartDigestError(request.part, request.sha256, actual);
  await store.putPart(
    upload,
    { part: request.part, bytes: request.data.length, sha256: actual },
    request.data,
  );
  const received = new Set([...parts.map((p) => p.part), request.part]).size;
  return { id: upload.id, part: request.part, received, parts: upload.parts };
}

/**
 * The text of a whole upload, for a plan or an apply that names it: every part there and each
 * what it said it was, the whole the size and SHA-256 the upload was started with. Anything else
 * is refused before the file is read (UploadIncompleteError, UploadDigestError).
 */
export async function uploadedFile(deps: UploadDeps, id: string, by: Actor): Promise<string> {
  const { upload, parts, store } = await uploadOf(deps, id, by);
  const byNumber = new Map(parts.map((p) => [p.part, p]));
  const missing: number[] = [];
  for (let n = 1; n <= upload.parts; n++) if (!byNumber.has(n)) missing.push(n);
  if (missing.length > 0) throw new UploadIncompleteError(id, missing, upload.parts);
  const ordered = [...byNumber.values()].sort((a, b) => a.part - b.part);
  const data = await store.partData(upload, ordered);
  for (const [i, part] of ordered.entries()) {
    const actual = sha256Of(data[i] as Buffer);
    if (actual !== part.sha256) throw new UploadDigestError(id, `part ${part.part}`, part.sha256, actual);
  }
  const whole = Buffer.concat(data as Buffer[]);
  const actual = sha256Of(whole);
  if (whole.length !== upload.bytes || actual !== upload.sha256)
    throw new UploadDigestError(id, 'the file', upload.sha256, actual);
  return whole.toString('utf8');
}

/** What a plan or an apply names: the file itself, or an upload of it. */
export type FileOrUpload = { readonly file: string } | { readonly upload: string };

/** The file a request carries or names. */
export const fileOf = (deps: UploadDeps, request: FileOrUpload, by: Actor): Promise<string> =>
  'file' in request && request.file !== undefined
    ? Promise.resolve(request.file)
    : uploadedFile(deps, (request as { upload: string }).upload, by);

/** A request that carries its file or names an upload of it. */
export type Named<Request extends { readonly file: string }> = Omit<Request, 'file'> & FileOrUpload;

/** The plan of a file carried or uploaded (POST /mesh/plan). */
export async function planNamed(
  deps: UploadDeps & { readonly meshFiles: MeshFileService },
  request: Named<PlanRequest> & { readonly by: Actor },
): Promise<{ readonly plan: ApplyPlan; readonly reading: LiveMeshReading }> {
  const { by, ...rest } = request;
  return deps.meshFiles.plan({ ...rest, file: await fileOf(deps, request, by) });
}

export class UploadNotFoundError extends MeshError {
  override name = 'UploadNotFoundError';
  readonly upload: string;
  constructor(upload: string, expired = false) {
    super(
      expired
        ? `upload ${upload} has expired (an upload lives ${uploadLifetimeSeconds / 3600} hours): upload the file again`
        : `no upload ${upload} of yours: upload the file again`,
    );
    this.upload = upload;
  }
}

export class UploadTooLargeError extends MeshError {
  override name = 'UploadTooLargeError';
  constructor(bytes: number) {
    super(`a mesh file of ${bytes} bytes is over the ${uploadMaxBytes} (64 MiB) an upload takes`);
  }
}

export class UploadPartOutOfRangeError extends MeshError {
  override name = 'UploadPartOutOfRangeError';
  constructor(part: number, parts: number) {
    super(`part ${part} of an upload of ${parts} parts: parts go from 1 to ${parts}`);
  }
}

export class UploadPartSizeError extends MeshError {
  override name = 'UploadPartSizeError';
  constructor(part: number, bytes: number, expected: number) {
    super(`part ${part} holds ${bytes} bytes where the upload's size says ${expected}: nothing was kept`);
  }
}

export class UploadPartDigestError extends MeshError {
  override name = 'UploadPartDigestError';
  constructor(part: number, said: string, actual: string) {
    super(`part ${part}'s bytes have SHA-256 ${actual}, not the ${said} sent with them: nothing was kept`);
  }
}

export class UploadPartDiffersError extends MeshError {
  override name = 'UploadPartDiffersError';
  constructor(part: number) {
    super(
      `part ${part} is there already with other bytes: an upload's parts do not change, start another upload`,
    );
  }
}

export class UploadIncompleteError extends MeshError {
  override name = 'UploadIncompleteError';
  readonly missing: readonly number[];
  constructor(upload: string, missing: readonly number[], parts: number) {
    const named =
      missing.length > 10
        ? `${missing.slice(0, 10).join(', ')} and ${missing.length - 10} more`
        : missing.join(', ');
    super(
      `upload ${upload} lacks ${missing.length} of its ${parts} parts (${named}): send them, then name it again`,
    );
    this.missing = missing;
  }
}

export class UploadDigestError extends MeshError {
  override name = 'UploadDigestError';
  constructor(upload: string, what: string, said: string, actual: string) {
    super(
      `upload ${upload}: ${what} has SHA-256 ${actual}, not the ${said} it was uploaded with: nothing was read or written`,
    );
  }
}
