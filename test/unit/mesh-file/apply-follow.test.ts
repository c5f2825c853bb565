import { describe, expect, it } from 'vitest';
import { followApplyJob } from '../../../lib/clients/cli/commands/apply-job.ts';
import { makeOutput } from '../../../lib/clients/cli/output.ts';
import { ApiClient, ApiProblemError, ApiUnreachableError } from '../../../lib/clients/http/api-client.ts';

/**
 * Issue 36, finding 6: a CLI following an apply job through a store outage exited 6 with "try
 * again", where the job goes on on the control plane whatever the CLI does: what to run is
 * `mesh apply --job ID`. A short outage is ridden out; a long one names the command.
 */
const id = '20261205T100000000Z-abcdef';
const running = { id, state: 'running', parts: 1, written: { items: 10, transactions: 1 }, progress: {} };
const done = { ...running, state: 'done', parts: 2 };
const tryAgain = () =>
  new Response(JSON.stringify({ error: { code: 'try_again', message: 'the store is away; try again' } }), {
    status: 503,
  });

function controlPlane(answers: Array<() => Response | Promise<Response>>) {
  let asked = 0;
  const fake: typeof fetch = async () => {
    const answer = answers[Math.min(asked, answers.length - 1)] as () => Response;
    asked += 1;
    return answer();
  };
  return new ApiClient('http://control-plane', { fetch: fake });
}

const quiet = () => {
  const said: string[] = [];
  const stream = { write: (text: string) => said.push(text) };
  const streams = {
    out: stream as unknown as typeof process.stdout,
    err: stream as unknown as typeof process.stderr,
  };
  return { output: makeOutput(true, streams), said };
};

describe('mesh apply following a job', () => {
  it('rides out a short outage, saying so once, and ends with the job', async () => {
    const api = controlPlane([() => Response.json(running), tryAgain, tryAgain, () => Response.json(done)]);
    const { output, said } = quiet();
    const job = await followApplyJob(api, output, id, 1, 1, 5);
    expect(job.state).toBe('done');
    expect(said.filter((line) => line.includes('"apply.job-unread"'))).toHaveLength(1);
  });

  it('names mesh apply --job ID when the store stays away past its patience, as the exit of "try again"', async () => {
    const { output } = quiet();
    const thrown = await followApplyJob(controlPlane([tryAgain]), output, id, 1, 1, 3).catch(
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(ApiProblemError);
    expect((thrown as ApiProblemError).status).toBe(503);
    expect((thrown as Error).message).toContain(`follow it again with mesh apply --job ${id}`);

    const unreachable = controlPlane([
      () => {
        throw new TypeError('fetch failed');
      },
    ]);
    const gone = await followApplyJob(unreachable, output, id, 1, 1, 3).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(ApiUnreachableError);
    expect((gone as Error).message).toContain(`mesh apply --job ${id}`);
  });

  it('does not ask again what the control plane refused for good', async () => {
    const refused = controlPlane([
      () =>
        new Response(JSON.stringify({ error: { code: 'apply_job_not_found', message: 'no' } }), {
          status: 404,
        }),
    ]);
    const thrown = await followApplyJob(refused, quiet().output, id, 1, 1, 3).catch((e: unknown) => e);
    expect((thrown as ApiProblemError).status).toBe(404);
    expect((thrown as Error).message).not.toContain('--job');
  });
});
