import { SealedDeclarationOpener } from '../../lib/clients/host/agent/declaration-opener.ts';
import { type HostRequests, HttpControlPlane } from '../../lib/clients/host/agent/http-control-plane.ts';
import { MqttSignalLink } from '../../lib/clients/host/agent/mqtt-signal-link.ts';
import type {
  AgentState,
  AgentStateStore,
  Applier,
  GoodDeclaration,
  SignalLink,
} from '../../lib/clients/host/agent/ports.ts';
import { runHostAgent } from '../../lib/clients/host/agent/run-loop.ts';
import { type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { agentLines } from '../../lib/clients/host/log-lines.ts';
import { connectPassword, type HostSigningKey, hostRequestSigner } from '../../lib/clients/host/proof.ts';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { fieldsOf } from '../../lib/server/core/coded-lines.ts';
import type { SignalChannel } from '../../lib/server/core/signal/channel.ts';

/** What the benches watch of one agent: when it connected, got each signal, applied each revision. */
export type AgentTimeline = {
  readonly node: string;
  connectedAt: number | undefined;
  readonly signalledAt: Map<number, number>;
  readonly appliedAt: Map<number, number>;
  /** Revisions whose apply failed (`failWhen`), and when. */
  readonly failedAt: Map<number, number>;
  /** When it was back on the signal after losing the broker, each time. */
  readonly reconnectedAt: number[];
  /** When it began each connect to the broker (the agent's own timing, before the broker's). */
  readonly connectAttemptsAt: number[];
  /** Each time it lost the broker, the moment of the reconnect window it drew (`host.signal.lost`'s `reconnectInMs`). */
  readonly reconnectDrawsMs: number[];
};

/** The agent's memory, kept in the bench's process. */
class MemoryAgentState implements AgentStateStore {
  #state: AgentState = { lastSequence: 0 };
  /** The last declaration written, for an applier that looks at what it applies. */
  declaration = '';
  async load() {
    return this.#state;
  }
  async save(state: AgentState) {
    this.#state = state;
  }
  async writeDeclaration(body: string) {
    this.declaration = body;
    return '/dev/null';
  }
  async readDeclaration() {
    return { path: '/dev/null', body: this.declaration === '' ? undefined : this.declaration };
  }
  #good: GoodDeclaration | undefined;
  async keepGood(good: GoodDeclaration) {
    this.#good = good;
  }
  async lastGood() {
    return this.#good;
  }
}

export type BenchAgents = {
  readonly timelines: ReadonlyMap<string, AgentTimeline>;
  stop(): Promise<void>;
};

/**
 * Runs the real host agent (run loop, signed HTTPS control plane, MQTT link) for each node, in
 * this process: on its signal when `channelOf` names one, polling every `intervalMs` otherwise.
 * The apply step notes the time, after `applyMs` when given. `requests` replaces how a node's
 * requests are sent (by default the operator CLI's ApiClient, signed with the node's key);
 * `heartbeatMs`, `maxBackoffMs` and `reconnectWindowMs` are the run loop's own. `failWhen` makes an apply fail, with
 * the reason it answers, for a declaration it picks (a module version that does not start, say).
 */
export function startAgents(options: {
  readonly api: string;
  readonly nodes: ReadonlyMap<string, NodeKeys>;
  readonly channelOf?: (node: string) => SignalChannel | undefined;
  readonly intervalMs: number;
  readonly heartbeatMs?: number;
  readonly maxBackoffMs?: number;
  readonly applyMs?: (node: string) => number;
  readonly requests?: (node: string, key: HostSigningKey) => HostRequests;
  readonly failWhen?: (node: string, declaration: string) => string | undefined;
  /** The run loop's window for a reconnect after a lost broker (a bed's short one). */
  readonly reconnectWindowMs?: number;
}): BenchAgents {
  const controller = new AbortController();
  const timelines = new Map<string, AgentTimeline>();
  const running: Array<Promise<unknown>> = [];
  for (const [node, keys] of options.nodes) {
    const timeline: AgentTimeline = {
      node,
      connectedAt: undefined,
      signalledAt: new Map(),
      appliedAt: new Map(),
      failedAt: new Map(),
      reconnectedAt: [],
      connectAttemptsAt: [],
      reconnectDrawsMs: [],
    };
    timelines.set(node, timeline);
    const key = signingKeyOf(node, keys);
    const state = new MemoryAgentState();
    const applier: Applier = {
      apply: async (_path, revision, signal) => {
        const delay = options.applyMs?.(node) ?? 0;
        if (delay > 0)
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, delay);
            const early = () => {
              clearTimeout(timer);
              resolve();
            };
            signal.addEventListener('abort', early, { once: true });
          });
        const failed = options.failWhen?.(node, state.declaration);
        if (failed !== undefined) {
          timeline.failedAt.set(revision, Date.now());
          return { ok: false, reason: failed };
        }
        timeline.appliedAt.set(revision, Date.now());
        return { ok: true };
      },
    };
    const channel = options.channelOf?.(node);
    running.push(
      runHostAgent({
        controlPlane: new HttpControlPlane(
          options.requests?.(node, key) ?? new ApiClient(options.api, { signer: hostRequestSigner(key) }),
          node,
        ),
        opener: new SealedDeclarationOpener(node, () => keys.sealing.privateKey),
        applier,
        state,
        intervalMs: options.intervalMs,
        ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
        ...(options.maxBackoffMs !== undefined ? { maxBackoffMs: options.maxBackoffMs } : {}),
        ...(options.reconnectWindowMs !== undefined ? { reconnectWindowMs: options.reconnectWindowMs } : {}),
        ...(channel
          ? {
              channel,
              signalLink: timedLink(
                new MqttSignalLink({ clientId: node, password: () => connectPassword(key) }),
                timeline.connectAttemptsAt,
              ),
            }
          : {}),
        log: (said) => {
          if (fieldsOf(said, agentLines.onSignal)) timeline.connectedAt ??= Date.now();
          if (fieldsOf(said, agentLines.brokerBack)) timeline.reconnectedAt.push(Date.now());
          const lost = fieldsOf(said, agentLines.brokerLost);
          if (lost) timeline.reconnectDrawsMs.push(lost.reconnectInMs);
          const signalled = fieldsOf(said, agentLines.signalled);
          if (signalled) timeline.signalledAt.set(signalled.revision, Date.now());
        },
        signal: controller.signal,
      }),
    );
  }
  return {
    timelines,
    async stop() {
      controller.abort();
      await Promise.allSettled(running);
    },
  };
}

/** The link, noting when each connect begins. */
function timedLink(link: SignalLink, attempts: number[]): SignalLink {
  return {
    open: (channel, handlers) => {
      attempts.push(Date.now());
      return link.open(channel, handlers);
    },
    close: () => link.close(),
  };
}

/** Resolves once `check` holds, polling every 50 ms; rejects after `timeoutMs` naming what it waited for. */
export async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
