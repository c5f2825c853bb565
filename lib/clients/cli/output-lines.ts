import { codedLine } from '../../server/core/coded-lines.ts';
import { type MeshMoved, movedText } from '../../server/core/mesh-file/moved.ts';

/** `rollout:ID` as `rollout ID`, `freeze:role=db` as `freeze role=db`, `freeze:all` as `freeze --all`. */
export const holderText = (by: string) => {
  const [kind, ...rest] = by.split(':');
  const what = rest.join(':');
  return kind === 'freeze' && what === 'all' ? 'freeze --all' : `${kind} ${what}`;
};

/**
 * What `mesh` says on stderr besides its result (docs/codes.md): progress, notes, failures. For
 * people each is a line, a failure after `mesh: `; under `--json` each is one JSON line with its
 * code, the result still the one document on stdout.
 */
export const cliLines = {
  rolloutStarted: codedLine<{
    readonly rollout: string;
    readonly what: string;
    readonly waves: number;
    readonly nodes: number;
  }>(
    'rollout.started',
    'info',
    ({ rollout, what, waves, nodes }) => `rollout ${rollout}: ${what}, ${nodes} nodes in ${waves} waves`,
  ),
  rolloutClaiming: codedLine<{
    readonly rollout: string;
    readonly claimed: number;
    readonly total: number;
  }>(
    'rollout.claiming',
    'info',
    ({ rollout, claimed, total }) => `rollout ${rollout}: claiming its nodes, ${claimed} of ${total} claimed`,
  ),
  rolloutWave: codedLine<{
    readonly rollout: string;
    readonly wave: number;
    readonly of: number;
    readonly nodes: readonly string[];
    readonly counts: Readonly<Record<string, number>>;
    readonly remaining: number;
  }>('rollout.wave', 'info', ({ wave, of, nodes, counts, remaining }) => {
    const shown =
      nodes.length > 10 ? `${nodes.slice(0, 10).join(', ')} and ${nodes.length - 10} more` : nodes.join(', ');
    const states = Object.entries(counts)
      .map(([state, count]) => `${count} ${state}`)
      .join(', ');
    return `wave ${wave}/${of}: ${shown}: ${states}; ${remaining} nodes in later waves`;
  }),
  rolloutFailedNode: codedLine<{
    readonly rollout: string;
    readonly node: string;
    readonly state: string;
    readonly step: string;
  }>(
    'rollout.node-failed',
    'warn',
    ({ node, state, step }) => `${node} ${state === 'failed' ? `failed at ${step}` : `timed out (${step})`}`,
  ),
  rolloutEnded: codedLine<{
    readonly rollout: string;
    readonly state: string;
    readonly reason?: string;
    readonly notSent: number;
  }>(
    'rollout.ended',
    'info',
    ({ rollout, state, reason, notSent }) =>
      `rollout ${rollout} ${state}${reason ? `: ${reason}` : ''}${notSent > 0 ? `; ${notSent} nodes not sent stay behind` : ''}`,
  ),
  unreachable: codedLine<{ readonly reason: string }>(
    'cli.unreachable',
    'error',
    ({ reason }) => `${reason}; is it running? (npm start, or --api URL)`,
  ),
  refused: codedLine<{ readonly reason: string; readonly status: number; readonly detail: string }>(
    'cli.refused',
    'error',
    ({ detail }) => `${detail}`,
  ),
  roleNeeded: codedLine<{
    readonly reason: string;
    readonly status: number;
    readonly detail: string;
    readonly role: string;
    readonly route: string;
  }>('cli.role-needed', 'error', ({ detail }) => `${detail}`),
  failed: codedLine<{ readonly reason: string }>('cli.failed', 'error', ({ reason }) => reason),
  usage: codedLine<{ readonly problem: string; readonly argument?: string }>(
    'cli.usage',
    'error',
    ({ problem, argument }) => `${argument ? `${argument}: ` : ''}${problem}`,
  ),
  fileTooLarge: codedLine<{ readonly file: string; readonly bytes: number; readonly limit: number }>(
    'cli.file-too-large',
    'error',
    ({ file, bytes, limit }) =>
      `${file} holds ${bytes} bytes, over the ${limit} (64 MiB) a mesh file may be: nothing was sent`,
  ),
  uploadPart: codedLine<{
    readonly file: string;
    readonly upload: string;
    readonly part: number;
    readonly parts: number;
    readonly sent: number;
    readonly bytes: number;
  }>('upload.part', 'info', ({ file, part, parts, sent, bytes }) => {
    const mb = (n: number) => (n / 1e6).toFixed(1);
    return `uploaded ${file}: part ${part} of ${parts} (${mb(sent)} of ${mb(bytes)} MB)`;
  }),
  fileUnreadable: codedLine<{ readonly file: string; readonly reason: string }>(
    'cli.file-unreadable',
    'error',
    ({ file, reason }) => `cannot read ${file}: ${reason}`,
  ),
  meshFileProblem: codedLine<{
    readonly file: string;
    readonly line: number;
    readonly column: number;
    readonly problem: string;
    readonly detail: string;
  }>(
    'mesh-file.problem',
    'error',
    ({ file, line, column, problem, detail }) => `${file}:${line}:${column}: ${detail} [${problem}]`,
  ),
  meshFileOmitted: codedLine<{ readonly omitted: number }>(
    'mesh-file.omitted',
    'error',
    ({ omitted }) => `… and ${omitted} more`,
  ),
  applyProgress: codedLine<{
    readonly part: number;
    readonly items: number;
    readonly transactions: number;
    readonly touched: number;
    readonly touchedNodes: readonly string[];
    readonly remaining: number;
    readonly remainingNodes: readonly string[];
  }>('apply.progress', 'info', ({ part, items, transactions, touched, remaining, remainingNodes }) => {
    const next = remainingNodes.length > 0 ? ` (next: ${remainingNodes.slice(0, 3).join(', ')}…)` : '';
    return `applied part ${part}: ${touched} nodes written so far, ${remaining} remain${next}; ${items} items in ${transactions} transactions so far; continuing…`;
  }),
  applyInterrupted: codedLine<{ readonly job: string; readonly touched: number; readonly reason: string }>(
    'apply.interrupted',
    'warn',
    ({ job, touched, reason }) =>
      `the request wrote part of the apply (${touched} nodes) before its store could not be asked (${reason}): apply job ${job} goes on with the rest once the store is back`,
  ),
  applyJobUnread: codedLine<{ readonly job: string; readonly reason: string }>(
    'apply.job-unread',
    'warn',
    ({ job, reason }) => `apply job ${job} cannot be read now (${reason}); asking again`,
  ),
  applyJob: codedLine<{ readonly job: string }>(
    'apply.job',
    'info',
    ({ job }) =>
      `the rest goes on as apply job ${job} on the control plane (Ctrl-C leaves it running; follow it with mesh apply --job ${job})`,
  ),
  applyMoved: codedLine<{ readonly from: string; readonly to: string; readonly moved: MeshMoved }>(
    'apply.moved',
    'error',
    ({ moved }) => `the mesh moved since the plan was made: ${movedText(moved)}; plan again`,
  ),
  fileExists: codedLine<{ readonly reason: string }>(
    'cli.file-exists',
    'error',
    ({ reason }) => `${reason}; no token was issued`,
  ),
  planning: codedLine<{ readonly what: string }>(
    'push.planning',
    'info',
    ({ what }) => `planning a push of ${what}; nothing is written…`,
  ),
  pushing: codedLine<{ readonly what: string }>('push.pushing', 'info', ({ what }) => `pushing ${what}…`),
  pushOnNode: codedLine<{
    readonly node: string;
    readonly at: number;
    readonly of: number;
    readonly on: string;
  }>('push.on-node', 'info', ({ node, at, of, on }) => `pushing ${node} (${at} of ${of} matching ${on})…`),
  pushOnStopped: codedLine<{
    readonly on: string;
    readonly pushed: readonly string[];
    readonly remaining: readonly string[];
  }>('push.on-stopped', 'error', ({ on, pushed, remaining }) => {
    const some = (nodes: readonly string[]) =>
      nodes.length <= 10
        ? nodes.join(', ')
        : `${nodes.slice(0, 10).join(', ')} and ${nodes.length - 10} more`;
    return `push --on ${on} stopped: ${pushed.length} pushed${pushed.length > 0 ? ` (${some(pushed)})` : ''}, ${remaining.length} not (${some(remaining)}); run it again`;
  }),
  following: codedLine<{ readonly push: string }>(
    'push.following',
    'info',
    ({ push }) => `push ${push} is taking a while; following it (Ctrl-C stops following, not the push)`,
  ),
  progress: codedLine<{
    readonly push: string;
    readonly round: number | null;
    readonly checked: number;
    readonly pending: number;
    readonly flushed: number;
  }>('push.progress', 'info', ({ push, round, checked, pending, flushed }) => {
    if (round === null) return `push ${push}: starting…`;
    const filled = pending === 0 ? 20 : Math.min(20, Math.round((20 * checked) / pending));
    const count = (n: number) => n.toLocaleString('en');
    return `push ${push}: round ${round} [${'#'.repeat(filled)}${'-'.repeat(20 - filled)}] ${count(checked)} of ${count(pending)} looked at, ${count(flushed)} flushed`;
  }),
  pushHeldBack: codedLine<{
    readonly by: string;
    readonly nodes: readonly string[];
    readonly count: number;
    readonly release: string;
  }>('push.held-back', 'info', ({ by, nodes, count, release }) => {
    const more = count - nodes.length;
    const shown =
      nodes.length === 0
        ? `${count} node${count === 1 ? '' : 's'}`
        : `${nodes.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
    return `held back by ${holderText(by)}, not sent: ${shown}; ${release}`;
  }),
  pushFailed: codedLine<{ readonly push: string; readonly reason: string }>(
    'push.failed',
    'error',
    ({ push, reason }) => `push ${push} failed: ${reason}`,
  ),
  pushUnfinished: codedLine<{ readonly push: string }>(
    'push.unfinished',
    'error',
    ({ push }) => `push ${push} never finished (its flow stopped); run mesh push --behind to finish its work`,
  ),
  tokenShownOnce: codedLine<{ readonly node: string; readonly valid: string }>(
    'token.shown-once',
    'info',
    ({ node, valid }) =>
      `issued a token for ${node}, ${valid}. It is shown only this once: on the node, run MESH_TOKEN=… mesh-host enrol --node ${node}, or use --out FILE and mesh-host enrol --token-file FILE.`,
  ),
  tokenFileNext: codedLine<{ readonly node: string; readonly file: string }>(
    'token.file-next',
    'info',
    ({ node, file }) =>
      `copy ${file} to the node, run mesh-host enrol --node ${node} --token-file FILE there, then delete it`,
  ),
  declarationSent: codedLine<{
    readonly node: string;
    readonly revision: number;
    readonly sentAt: string;
    readonly digest: string;
  }>(
    'declaration.sent',
    'info',
    ({ node, revision, sentAt, digest }) => `${node}: revision ${revision}, sent ${sentAt}, digest ${digest}`,
  ),
  answerPage: codedLine<{ readonly what: string; readonly page: number }>(
    'answer.page',
    'info',
    ({ what, page }) => `${what}: page ${page} read; reading on…`,
  ),
  answerRestarted: codedLine<{ readonly what: string; readonly reason: string }>(
    'answer.restarted',
    'warn',
    ({ what, reason }) => `${what}: ${reason}; reading it again from its first page`,
  ),
  viewPage: codedLine<{ readonly view: string; readonly page: number; readonly nodes: number }>(
    'view.page',
    'info',
    ({ view, page, nodes }) =>
      `${view}: page ${page}, ${nodes.toLocaleString('en')} nodes so far; reading on…`,
  ),
  graphCounted: codedLine<{ readonly nodes: number; readonly relations: number }>(
    'graph.counted',
    'info',
    ({ nodes, relations }) => `${nodes} nodes, ${relations} relations`,
  ),
  summaryNotExact: codedLine<{ readonly lost: boolean; readonly catchingUp?: boolean }>(
    'summary.not-exact',
    'warn',
    ({ catchingUp }) =>
      catchingUp
        ? 'the summary is catching up with the mesh (its counts trail the changes made since the control plane started, or a backlog): ask again in a moment'
        : 'the summary may be missing changes (some were let go, or a rebuild is under way): mesh status --summary --rebuild counts it again',
  ),
  summaryRebuilt: codedLine<{ readonly nodes: number }>(
    'summary.rebuilt',
    'info',
    ({ nodes }) => `the summary was counted again from every node's items: ${nodes} nodes`,
  ),
  auditFinding: codedLine<{
    readonly subject: string;
    readonly seq: number;
    readonly problem: string;
    readonly says: string;
  }>(
    'audit.finding',
    'error',
    ({ subject, seq, problem, says }) => `${subject} record ${seq} ${problem}: ${says}`,
  ),
  waitTimedOut: codedLine<{ readonly what: string; readonly timeout: string }>(
    'wait.timed-out',
    'error',
    ({ what, timeout }) => `${what}: not yet after ${timeout}; it goes on on the control plane (exit 17)`,
  ),
  waitNode: codedLine<{
    readonly node: string;
    readonly goal: string;
    readonly sent: number | null;
    readonly applied: number | null;
    readonly health: string | null;
  }>(
    'wait.node',
    'info',
    ({ node, goal, sent, applied, health }) =>
      `${node}: sent ${sent ?? '-'}, applied ${applied ?? '-'}${health ? `, ${health}` : ''}; waiting until ${goal}`,
  ),
  waitNodeFailed: codedLine<{
    readonly node: string;
    readonly goal: string;
    readonly revision: number;
    readonly reason: string;
  }>(
    'wait.node-failed',
    'error',
    ({ node, goal, revision, reason }) => `${node} will not be ${goal} at revision ${revision}: ${reason}`,
  ),
  auditMore: codedLine<{ readonly shown: number; readonly limit: number }>(
    'audit.more',
    'info',
    ({ shown }) =>
      `${shown} newest records shown, and older ones exist: raise --limit, or narrow with --since, --node, --actor or --action`,
  ),
  auditVerified: codedLine<{
    readonly chains: number;
    readonly records: number;
    readonly indexed: number;
    readonly findings: number;
  }>(
    'audit.verified',
    'info',
    ({ chains, records, indexed, findings }) =>
      `${chains} chains, ${records.toLocaleString('en')} records, ${indexed.toLocaleString('en')} listed by day: ${findings === 0 ? 'intact' : `${findings} findings`}`,
  ),
  consoleStopped: codedLine<{ readonly signal: string }>(
    'console.stopped',
    'info',
    ({ signal }) => `mesh console: ${signal} received, stopped`,
  ),
} as const;
