import { ErrorTable, internal, refused } from '../error-table.ts';
import { BadSelectorError } from '../mesh/labels.ts';
import { ApplyJobNotFoundError, ApplyJobRaceError, ApplyJobRunningError } from './apply-job.ts';
import { ExportMovedError } from './pages.ts';
import { PartlyAppliedError } from './partly-applied.ts';
import { MassRemovalError, PlanChangedError, StalePlanError } from './plan-checks.ts';
import { BadMeshFileError } from './problems.ts';

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
  // answered by mesh-apply's handler as its cause is, naming the job (lib/server/api/handlers/mesh-file.ts)
  PartlyAppliedError: internal(PartlyAppliedError),
});
