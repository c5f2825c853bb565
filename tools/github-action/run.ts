#!/usr/bin/env node
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The GitHub Action's step (action.yml): on a pull request, `mesh apply -f FILE --plan --full` and
 * `mesh diff -f FILE`, posted as one comment on the pull request and updated on every run; on a
 * push to the main branch, `mesh apply -f FILE --push`, the job failing with the CLI's exit code.
 * It talks to GitHub's REST API with the workflow's token and fetch alone (docs/gitops.md).
 *
 * Environment: MESH_FILE (the mesh file), MESH_API (the control plane, read by the CLI itself),
 * MESH_WAVES (optional: the apply's push in waves), MESH_MAIN_BRANCH (optional: the branch whose
 * pushes apply; the repository's default branch otherwise), GITHUB_TOKEN, and what GitHub sets
 * for every step (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_REF,
 * GITHUB_API_URL, GITHUB_STEP_SUMMARY).
 */

/** The first line of the comment this step owns: how it finds its own comment again, one per file. */
export const commentMarker = (file: string) => `<!-- mesh-plan: ${file} -->`;
/** GitHub refuses a comment over 65,536 characters; the plan is cut well before, saying so. */
const maxPlanChars = 60_000;
/** Exit codes of this step apart from the CLI's own (docs/gitops.md). */
const usage = 2;
const unavailable = 6;

type Run = { readonly code: number; readonly output: string };

const meshCli = fileURLToPath(new URL('../../bin/mesh.ts', import.meta.url));

/** The CLI's run, its output kept (stdout and stderr in the order written) and echoed to the job's log. */
function mesh(args: readonly string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [meshCli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output += chunk.toString();
      process.stdout.write(chunk);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

const required = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new UsageError(`${name} is not set`);
  return value;
};

class UsageError extends Error {
  override name = 'UsageError';
}

class GithubApiError extends Error {
  override name = 'GithubApiError';
}

type GithubEvent = {
  readonly pull_request?: { readonly number: number };
  readonly repository?: { readonly default_branch?: string };
};

function github(token: string) {
  const base = (process.env.GITHUB_API_URL ?? 'https://api.github.com').replace(/\/$/, '');
  return async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const answer = await fetch(`${base}${path}`, {
      method,
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${token}`,
        'x-github-api-version': '2022-11-28',
        'user-agent': 'mesh-github-action',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!answer.ok) {
      throw new GithubApiError(
        `GitHub answered ${answer.status} to ${method} ${path}: ${(await answer.text()).slice(0, 300)}`,
      );
    }
    return answer.status === 204 ? undefined : answer.json();
  };
}

const fenced = (text: string) => {
  const cut =
    text.length > maxPlanChars ? `${text.slice(0, maxPlanChars)}\n… (cut: the job's log has it whole)` : text;
  return `\`\`\`text\n${cut.replaceAll('```', '` ` `')}\n\`\`\``;
};

/** The comment: what the plan would change (old → new), whether the mesh differs, and how each command ended. */
export function planComment(file: string, plan: Run, diff: Run): string {
  const verdict =
    plan.code !== 0
      ? `**The plan failed** (\`mesh apply --plan\` exited ${plan.code}): merging this would not apply.`
      : diff.code === 0
        ? 'The mesh already matches this file: merging changes nothing.'
        : diff.code === 1
          ? 'Merging applies these changes and pushes what they leave behind.'
          : `\`mesh diff\` exited ${diff.code}: see the job's log.`;
  return [
    commentMarker(file),
    `### Mesh plan for \`${file}\``,
    '',
    verdict,
    '',
    fenced(plan.output.trimEnd()),
    '',
    `<sub>\`mesh apply -f ${file} --plan --full\` exited ${plan.code}; \`mesh diff -f ${file}\` exited ${diff.code}.</sub>`,
  ].join('\n');
}

/** Posts the comment, or edits the one this step posted before for the same file. */
async function upsertComment(repo: string, pull: number, token: string, file: string, body: string) {
  const call = github(token);
  const marker = commentMarker(file);
  for (let page = 1; ; page += 1) {
    const comments = (await call(
      'GET',
      `/repos/${repo}/issues/${pull}/comments?per_page=100&page=${page}`,
    )) as {
      id: number;
      body?: string;
    }[];
    const mine = comments.find((comment) => comment.body?.startsWith(marker));
    if (mine) {
      await call('PATCH', `/repos/${repo}/issues/comments/${mine.id}`, { body });
      return `updated comment ${mine.id}`;
    }
    if (comments.length < 100) break;
  }
  const posted = (await call('POST', `/repos/${repo}/issues/${pull}/comments`, { body })) as { id: number };
  return `posted comment ${posted.id}`;
}

const summary = (text: string) => {
  const path = process.env.GITHUB_STEP_SUMMARY;
  if (path) appendFileSync(path, `${text}\n`);
};

async function main(): Promise<number> {
  const file = required('MESH_FILE');
  const eventName = required('GITHUB_EVENT_NAME');
  const event = JSON.parse(readFileSync(required('GITHUB_EVENT_PATH'), 'utf8')) as GithubEvent;
  if (eventName === 'pull_request' || eventName === 'pull_request_target') {
    const pull = event.pull_request?.number;
    if (!Number.isInteger(pull)) throw new UsageError(`the ${eventName} event names no pull request`);
    // every name of every change, for a reviewer: the comment is cut only at GitHub's own limit
    const plan = await mesh(['apply', '-f', file, '--plan', '--full']);
    const diff = await mesh(['diff', '-f', file]);
    const body = planComment(file, plan, diff);
    summary(body);
    const done = await upsertComment(
      required('GITHUB_REPOSITORY'),
      pull as number,
      required('GITHUB_TOKEN'),
      file,
      body,
    );
    console.log(`mesh-github-action: ${done} on pull request #${pull}`);
    // a plan that fails (a failed test in the file, a file the control plane refuses) fails the check
    return plan.code;
  }
  if (eventName === 'push') {
    const main = process.env.MESH_MAIN_BRANCH || event.repository?.default_branch || 'main';
    const ref = required('GITHUB_REF');
    if (ref !== `refs/heads/${main}`) {
      console.log(`mesh-github-action: ${ref} is not refs/heads/${main}; nothing applied`);
      return 0;
    }
    const waves = process.env.MESH_WAVES ? ['--waves', process.env.MESH_WAVES] : [];
    const applied = await mesh(['apply', '-f', file, '--push', ...waves]);
    summary(`### Mesh apply of \`${file}\` (exit ${applied.code})\n\n${fenced(applied.output.trimEnd())}`);
    return applied.code;
  }
  throw new UsageError(`the ${eventName} event is neither a pull request nor a push`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`mesh-github-action: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(error instanceof UsageError ? usage : error instanceof GithubApiError ? unavailable : 1);
    },
  );
}
