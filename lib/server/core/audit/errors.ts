import { ErrorTable, refused } from '../error-table.ts';

/** The audit area's errors (lib/core/audit), and at the end its table: one row each. */
export class AuditError extends Error {
  override name = 'AuditError';
}

/** A cursor of `GET /audit` that this API did not give. */
export class AuditCursorError extends AuditError {
  override name = 'AuditCursorError';
}

export const auditErrors = new ErrorTable({
  AuditError: refused(AuditError, 400, 'audit_refused'),
  AuditCursorError: refused(AuditCursorError, 400, 'bad_cursor'),
});
