import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TokenView } from '../../../server/core/enrolment/token-state.ts';
import type { IssuedToken } from '../../../server/core/enrolment/tokens.ts';
import { mapLimit } from '../../../server/core/map-limit.ts';
import type { NodeStatus } from '../../../server/core/views/ports.ts';
import type { NodeDetails } from '../../../server/core/views/views.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import type { ApiClient } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { writeSecretFile } from '../secret-file.ts';

/** Requests in flight at once: a fleet's tokens in minutes, without crowding the API. */
const inFlight = 8;

/** A token that can still enrol its node: issued, or claimed by a host that may yet spend it. */
const live = (token: TokenView | null) => token?.state === 'issued' || token?.state === 'claimed';

/**
 * `mesh token issue --unenrolled --out-dir DIR`: a token file (0600, DIR/NODE.token) for every
 * node not enrolled whose token is missing or lapsed (expired, revoked), for a provisioning
 * system to place on each machine. Tokens are written to files only, never printed; the count
 * and the folder are.
 */
export async function issueUnenrolled(
  api: ApiClient,
  output: Output,
  options: { readonly outDir: string; readonly ttl: string; readonly force: boolean },
): Promise<ExitCode> {
  const { nodes } = await api.call<{ nodes: NodeStatus[] }>('GET', '/status');
  const candidates = nodes.filter((node) => !node.enrolled).map((node) => node.node);
  const details = await mapLimit(candidates, inFlight, (node) =>
    api.call<NodeDetails>('GET', `/nodes/${node}`),
  );
  const wanting = details.filter((d) => !live(d.token)).map((d) => d.node);
  await mkdir(options.outDir, { recursive: true, mode: 0o700 });
  const written = await mapLimit(wanting, inFlight, async (node) => {
    const issued = await api.call<IssuedToken>('POST', `/nodes/${node}/token`, { ttl: options.ttl });
    return writeSecretFile(join(options.outDir, `${node}.token`), `${issued.token}\n`, options.force);
  });
  output.result({ issued: written.length, outDir: options.outDir, nodes: wanting });
  output.line(`wrote ${written.length} token files (mode 0600) to ${options.outDir}`);
  return ExitCode.ok;
}
