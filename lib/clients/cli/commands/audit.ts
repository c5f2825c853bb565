import type { Command } from 'commander';
import * as z from 'zod';
import type { AuditVerdict } from '../../../server/core/audit/ports.ts';
import { type AuditRecord, auditActionFilter } from '../../../server/core/audit/record.ts';
import type { ChainFinding } from '../../../server/core/audit/verify.ts';
import { nodeName } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import type { ApiClient } from '../../http/api-client.ts';
import { action, usage } from '../command-context.ts';
import { cliLines } from '../output-lines.ts';

type AuditOptions = { node?: string; actor?: string; action?: string; since?: string; limit: string };

const auditOptions = z.object({
  node: nodeName.optional(),
  actor: z.string().min(1).optional(),
  action: auditActionFilter.optional(),
  since: z.iso.datetime({ offset: true, message: 'since is an ISO time, 2026-12-01T00:00:00Z' }).optional(),
  limit: z.coerce.number().int().min(1, 'limit is at least 1').max(10_000, 'limit is at most 10000'),
});

/** `mesh audit` and `mesh audit verify` (docs/audit.md). */
export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('who did what: the audit trail, newest first')
    .option('--node <node>', "one node's records")
    .option('--actor <principal>', 'one principal: an IAM ARN, local, or key:<thumbprint>')
    .option('--action <action>', 'one action: token.issue, node.remove, push.start…')
    .option('--since <time>', 'records at or after this ISO time')
    .option('--limit <n>', 'at most this many records', '100')
    .action(
      action(async ({ api, output }, options: AuditOptions) => {
        const parsed = auditOptions.safeParse(options);
        if (!parsed.success) return usage(output, parsed.error);
        const { limit, ...filters } = parsed.data;
        const records: AuditRecord[] = [];
        let next: string | undefined;
        do {
          const query = new URLSearchParams({
            ...Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined)),
            limit: String(Math.min(200, limit - records.length)),
            ...(next ? { cursor: next } : {}),
          });
          const page = await api.call<{ records: AuditRecord[]; next?: string }>('GET', `/audit?${query}`);
          for (const record of page.records) {
            records.push(record);
            output.line(recordLine(record));
          }
          next = page.next;
        } while (next && records.length < limit);
        // A page cut at the limit names its continuation even when nothing is past it: one record
        // more is read to know whether older ones exist.
        const more = next !== undefined && (await anyPast(api, filters, next));
        if (more) output.say(cliLines.auditMore, { shown: records.length, limit });
        output.result({ records, ...(more ? { more: true } : {}) });
        return ExitCode.ok;
      }),
    );

  audit
    .command('verify')
    .description(
      'checks every chain of the audit trail: names each record removed, altered, reordered or hidden',
    )
    .action(
      action(async ({ api, output }) => {
        const found: ChainFinding[] = [];
        let chains = 0;
        let records = 0;
        let indexed = 0;
        let findingCount = 0;
        let after: string | undefined;
        do {
          const query = after ? `?${new URLSearchParams({ after })}` : '';
          const page = await api.call<AuditVerdict>('GET', `/audit/verify${query}`);
          chains += page.chains;
          records += page.records;
          indexed += page.indexed ?? 0;
          findingCount += page.findingCount;
          for (const finding of page.findings) {
            found.push(finding);
            output.say(cliLines.auditFinding, finding);
          }
          after = page.next;
        } while (after);
        output.say(cliLines.auditVerified, { chains, records, indexed, findings: findingCount });
        output.result({ chains, records, indexed, findingCount, findings: found });
        return findingCount === 0 ? ExitCode.ok : ExitCode.auditBroken;
      }),
    );
}

async function anyPast(api: ApiClient, filters: Record<string, string | undefined>, cursor: string) {
  const query = new URLSearchParams({
    ...Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined)),
    limit: '1',
    cursor,
  });
  const page = await api.call<{ records: AuditRecord[] }>('GET', `/audit?${query}`);
  return page.records.length > 0;
}

function recordLine(record: AuditRecord): string {
  const details = Object.entries(record.details ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
  return [
    record.time,
    record.action,
    record.target,
    record.outcome,
    `by ${record.principal}`,
    `from ${record.source}`,
    details,
  ]
    .filter(Boolean)
    .join('  ');
}
