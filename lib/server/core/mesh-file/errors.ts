import { ErrorTable, internal, refused } from '../error-table.ts';
import { BadSelectorError } from '../mesh/labels.ts';
import { ApplyJobNotFoundError, ApplyJobRaceError, ApplyJobRunningError } from './apply-job.ts';
import { ExportMovedError } from './pages.ts';
import { PartlyAppliedError } from './partly-applied.ts';
import { MassRemovalError, PlanChangedError, StalePlanError } from './plan-checks.ts';
import { BadMeshFileError } from './problems.ts';
import {
  UploadDigestError,
  UploadIncompleteError,
  UploadNotFoundError,
  UploadPartDiffersError,
  UploadPartDigestError,
  UploadPartOutOfRangeError,
  UploadPartSizeError,
  UploadTooLargeError,
} from './uploads.ts';

/** A prune asked on the operator's route: removing nodes and their enrolment is an admin's. */
export class PruneNeedsAdminError extends Error {
  override name = 'PruneNeedsAdminError';
  constructor() {
    super(
      'a prune removes nodes and their enrolment, which is an admin’s: send it to POST /mesh/apply/prune (mesh apply --prune), which needs MeshAdmin',
    );
  }
}

/** The mesh file's errors and their answers: a bad file names every problem, a stale plan both revisions. */
export const meshFileErrors = new ErrorTable({
  BadMeshFileError: refused(BadMeshFileError, 422, 'bad_mesh_file', {
    details: (e) => ({ problems: e.problems, omitted: e.omitted }),
  }),
  MassRemovalError: refused(MassRemovalError, 409, 'mass_removal', {
    details: (e) => ({ nodes: e.removal.nodes, relations: e.removal.relations }),
  }),
  StalePlanError: refused(StalePlanError, 409, 'stale_plan', {
    details: (e) => ({ planned: e.planned, current: e.current }),
  }),
  PlanChangedError: refused(PlanChangedError, 409, 'plan_changed', {
    details: (e) => ({ planned: e.planned, current: e.current }),
  }),
  BadSelectorError: refused(BadSelectorError, 400, 'bad_selector'),
  ExportMovedError: refused(ExportMovedError, 409, 'mesh_moved', {
    details: (e) => ({ exported: e.exported, current: e.current }),
  }),
  ApplyJobRunningError: refused(ApplyJobRunningError, 409, 'apply_job_running', {
    details: (e) => ({ job: e.job }),
  }),
  ApplyJobNotFoundError: refused(ApplyJobNotFoundError, 404, 'apply_job_not_found'),
  // caught by the advance that lost, which leaves the job to the one that won
  ApplyJobRaceError: internal(ApplyJobRaceError),
  PartlyAppliedError: {
    ...internal(PartlyAppliedError),
    answeredAsCause: (e) => ({
      adds: e.written,
      details: { job: e.job },
      failed: 'the apply failed unexpectedly; the control plane logged why.',
    }),
  },
  PruneNeedsAdminError: refused(PruneNeedsAdminError, 403, 'prune_needs_admin'),
  UploadNotFoundError: refused(UploadNotFoundError, 404, 'upload_not_found', {
    details: (e) => ({ upload: e.upload }),
  }),
  UploadTooLargeError: refused(UploadTooLargeError, 413, 'upload_too_large'),
  UploadPartOutOfRangeError: refused(UploadPartOutOfRangeError, 400, 'bad_part'),
  UploadPartSizeError: refused(UploadPartSizeError, 400, 'bad_part'),
  UploadPartDigestError: refused(UploadPartDigestError, 422, 'part_digest_mismatch'),
  UploadPartDiffersError: refused(UploadPartDiffersError, 409, 'part_differs'),
  UploadIncompleteError: refused(UploadIncompleteError, 409, 'upload_incomplete', {
    details: (e) => ({ missing: e.missing.slice(0, 100), missingCount: e.missing.length }),
  }),
  UploadDigestError: refused(UploadDigestError, 422, 'upload_digest_mismatch'),
});
