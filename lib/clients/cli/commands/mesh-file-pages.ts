import { joinListPages } from '../../../server/core/answer-pages.ts';
import type { ApplyPlan } from '../../../server/core/mesh-file/index.ts';
import { planListPaths } from '../../../server/core/mesh-file/pages.ts';
import type { ExitCode } from '../../common/exit-codes.ts';
import { type ApiClient, ApiProblemError } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { answered, type FileOptions } from './mesh-file.ts';

/**
 * The export and the plan read a page at a time (docs/mesh-file.md, "Pages") and joined, so
 * what the user sees is what one answer would have been. Every page must be of one mesh
 * revision; when the mesh moves between pages the pages would not join, and the whole is read
 * again from its first page, a few times at most (both are reads: nothing was done twice).
 */
const readings = 3;

/** What says the mesh moved between two pages of one answer. */
const movedCodes = new Set(['mesh_moved', 'stale_plan', 'plan_changed']);

async function again<T>(output: Output, what: string, read: () => Promise<T>): Promise<T> {
  for (let reading = 1; ; reading += 1) {
    try {
      return await read();
    } catch (error) {
      if (!(error instanceof ApiProblemError && movedCodes.has(error.code)) || reading >= readings)
        throw error;
      output.say(cliLines.answerRestarted, { what, reason: error.message });
    }
  }
}

/** The whole export, its pages joined: the same bytes as an answer of one page. */
export function exportText(api: ApiClient, output: Output, format: string): Promise<string> {
  return again(output, 'export', async () => {
    let text = '';
    let cursor: string | undefined;
    for (let page = 1; ; page += 1) {
      const query = new URLSearchParams({ format, ...(cursor ? { cursor } : {}) });
      const answer = await api.call<{ file: string; next?: string }>('GET', `/mesh/export?${query}`);
      text += answer.file;
      if (!answer.next) return text;
      output.say(cliLines.answerPage, { what: 'export', page });
      cursor = answer.next;
    }
  });
}

/** The whole plan of a file, its pages joined; a bad file's problems printed and its exit. */
export function planPages(
  api: ApiClient,
  output: Output,
  options: FileOptions,
  body: object,
): Promise<ApplyPlan | ExitCode> {
  return again(output, 'plan', async () => {
    const pages: ApplyPlan[] = [];
    let cursor: string | undefined;
    for (let page = 1; ; page += 1) {
      const answer = await api.send('POST', '/mesh/plan', { ...body, ...(cursor ? { cursor } : {}) });
      const got = answered<ApplyPlan & { next?: string }>(output, options, answer);
      if (typeof got === 'number') return got;
      const { next, ...plan } = got;
      pages.push(plan);
      if (!next) return joinListPages(pages, planListPaths);
      output.say(cliLines.answerPage, { what: 'plan', page });
      cursor = next;
    }
  });
}
