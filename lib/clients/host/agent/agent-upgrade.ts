import type { Transfer } from '../../../server/core/agent-release/ports.ts';
import { signedRelease } from '../../../server/core/agent-release/release.ts';
import { downloadStream } from '../../http/release-transfer.ts';
import { installRelease, readSlots } from '../release-slots.ts';
import { ControlPlaneUnavailableError } from './errors.ts';
import type { HostRequests } from './http-control-plane.ts';
import type { AgentUpgrader, UpgradeAttempt } from './ports.ts';

export { supervisedEnv } from '../supervisor.ts';

/**
 * A declaration naming another agent version (`agent: {version}`, `mesh agent upgrade`): the
 * release is fetched by the node's own key (`GET /hosts/NODE/releases/VERSION/ARCH`), streamed
 * and checked (release-slots.ts), and named the supervisor's trial; the agent then exits for the
 * supervisor to start it. A version this host already tried and rolled back, or refused, is not
 * tried again: the revision naming it is reported failed with why, so a rollout's wave fails and
 * halts, and nothing is downloaded twice for the same verdict.
 */
export type ReleaseUpgraderOptions = {
  /** The version this agent runs, as it reports it. */
  readonly version: string;
  readonly dir: string;
  readonly node: string;
  readonly api: HostRequests;
  readonly arch: string;
  readonly builtInKeys: () => readonly string[];
  readonly supervised: boolean;
  readonly now?: () => Date;
  readonly download?: (transfer: Transfer) => Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;
};

export class ReleaseUpgrader implements AgentUpgrader {
  readonly version: string;
  readonly #options: ReleaseUpgraderOptions;

  constructor(options: ReleaseUpgraderOptions) {
    this.version = options.version;
    this.#options = options;
  }

  async upgrade(version: string): Promise<UpgradeAttempt> {
    const { dir, node, api, arch } = this.#options;
    const now = this.#options.now ?? (() => new Date());
    if (!this.#options.supervised)
      return {
        installed: false,
        reason: `agent ${version} wanted, but this agent runs without mesh-host supervise, which installs releases`,
      };
    const { outcome } = await readSlots(dir);
    if (outcome && outcome.version === version && outcome.outcome !== 'upgraded')
      return {
        installed: false,
        reason: `agent ${version} ${outcome.outcome === 'refused' ? 'was refused' : 'was rolled back'}: ${outcome.reason ?? 'no reason kept'}`,
      };
    const answer = await api
      .send('GET', `/hosts/${node}/releases/${version}/${arch}`)
      .catch((error: unknown) => {
        throw new ControlPlaneUnavailableError(
          `the release ${version} could not be asked for: ${(error as Error).message}`,
        );
      });
    if (answer.status === 404)
      return { installed: false, reason: `agent ${version} is not published for ${arch}` };
    if (answer.status >= 500 || answer.status === 429)
      throw new ControlPlaneUnavailableError(
        `the release ${version} could not be asked for (${answer.status})`,
      );
    const body = answer.body as { release?: unknown; download?: Transfer } | undefined;
    const parsed = signedRelease.safeParse(
      body?.release && typeof body.release === 'object'
        ? {
            manifest: (body.release as { manifest?: unknown }).manifest,
            signature: (body.release as { signature?: unknown }).signature,
          }
        : undefined,
    );
    if (answer.status !== 200 || !parsed.success || !body?.download)
      return {
        installed: false,
        reason: `agent ${version}: the control plane answered ${answer.status} without a release`,
      };
    const download = this.#options.download ?? downloadStream;
    const transfer = body.download;
    const installed = await installRelease(dir, parsed.data, () => download(transfer), {
      builtInKeys: this.#options.builtInKeys(),
      arch,
      now,
    }).catch((error: unknown) => {
      throw new ControlPlaneUnavailableError(
        `the download of agent ${version} broke: ${(error as Error).message}`,
      );
    });
    if (installed.installed) return { installed: true };
    return { installed: false, reason: `agent ${version} was refused: ${installed.reason}` };
  }
}
