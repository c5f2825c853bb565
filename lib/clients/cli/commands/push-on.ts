import { parseSelector } from '../../../server/core/mesh/labels.ts';
import type { PushOutcome } from '../../../server/core/push/ports.ts';
import type { NodeStatus } from '../../../server/core/views/ports.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { type ApiClient, problemError } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { followPush, printOutcome } from './push.ts';

/**
 * `mesh push --on SELECTOR`: each node whose labels match is pushed as `mesh push NODE` pushes it,
 * one after another, each line of each push printed as that command prints it; the result is
 * every outcome, and the exit is the worst of them (5 when any push left a node behind). A push
 * that fails stops the rest, saying which nodes were pushed and which were not.
 */
export async function pushOn(
  api: ApiClient,
  output: Output,
  on: string,
  maxRounds: number,
): Promise<ExitCode> {
  try {
    parseSelector(on);
  } catch (error) {
    output.say(cliLines.usage, { argument: '--on', problem: (error as Error).message });
    return ExitCode.usage;
  }
  const picked = await nodesOn(api, on);
  const pushes: PushOutcome[] = [];
  if (picked.length === 0) {
    output.result({ on, nodes: [], pushes });
    output.line(`no node matches ${on}: nothing pushed`);
    return ExitCode.ok;
  }
  let exit: ExitCode = ExitCode.ok;
  const collect = (o: Output, outcome: PushOutcome): ExitCode => {
    pushes.push(outcome);
    printOutcome(o, outcome);
    return outcome.behind.length > 0 ? ExitCode.stillBehind : ExitCode.ok;
  };
  for (const [at, node] of picked.entries()) {
    output.say(cliLines.pushOnNode, { node, at: at + 1, of: picked.length, on });
    const stopped = () =>
      output.say(cliLines.pushOnStopped, { on, pushed: picked.slice(0, at), remaining: picked.slice(at) });
    const answer = await api.send('POST', '/push', { node, maxRounds, wait: true });
    if (answer.status >= 400) {
      stopped();
      throw problemError(answer);
    }
    const code =
      answer.status === 200
        ? collect(output, answer.body as PushOutcome)
        : await followPush(api, output, (answer.body as { push: string }).push, 1000, collect);
    if (pushes.length < at + 1) {
      stopped();
      return code;
    }
    if (code === ExitCode.stillBehind) exit = code;
  }
  output.result({ on, nodes: picked, pushes });
  return exit;
}

/** The names of the nodes `on` picks, the control plane filtering and paging them (`GET /status?on=`). */
export async function nodesOn(api: ApiClient, on: string): Promise<string[]> {
  const picked: string[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ on, limit: '1000', ...(cursor ? { cursor } : {}) });
    const page = await api.call<{ nodes: NodeStatus[]; next?: string }>('GET', `/status?${query}`);
    picked.push(...page.nodes.map((node) => node.node));
    cursor = page.next;
  } while (cursor);
  return picked;
}
