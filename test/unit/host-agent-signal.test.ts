import { describe, expect, it } from 'vitest';
import { ControlPlaneUnavailableError } from '../../lib/clients/host/agent/errors.ts';
import type {
  AgentState,
  AgentStateStore,
  ControlPlane,
  FetchedDeclaration,
  GoodDeclaration,
  HostReport,
  SignalHandlers,
  SignalLink,
} from '../../lib/clients/host/agent/ports.ts';
import { runHostAgent } from '../../lib/clients/host/agent/run-loop.ts';
import type { NodeSignal, SignalChannel } from '../../lib/server/core/signal/channel.ts';

const channel: SignalChannel = {
  url: 'mqtt://127.0.0.1:4601',
  username: 'web1',
  topic: 'mesh/nodes/web1/signal',
};
const moved: SignalChannel = { ...channel, url: 'mqtt://127.0.0.1:4701' };

/** The control plane at one revision the test moves; every fetch is counted, and names `channel` when told. */
class MovingControlPlane implements ControlPlane {
  revision = 0;
  fetches = 0;
  readonly reports: HostReport[] = [];
  names: SignalChannel | undefined;

  async fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration> {
    this.fetches += 1;
    const signal = this.names ? { signal: this.names } : {};
    if (this.revision === 0) return { status: 'not-sent', ...signal };
    if (etag === `"r${this.revision}"`) return { status: 'unchanged', ...signal };
    return { status: 'changed', etag: `"r${this.revision}"`, revision: this.revision, body: '{}', ...signal };
  }

  /** How many sends to answer "try again" (503) before taking reports again. */
  refuseReports = 0;
  refused = 0;

  async sendReport(report: HostReport): Promise<void> {
    if (this.refuseReports > 0) {
      this.refuseReports -= 1;
      this.refused += 1;
      throw new ControlPlaneUnavailableError('the control plane said try again (503 try_again)');
    }
    this.reports.push(report);
  }
}

/** The broker as the agent sees it: up or away, and the test delivers signals and drops the connection. */
class FakeBroker implements SignalLink {
  up = true;
  opened: SignalChannel[] = [];
  closes = 0;
  #handlers: SignalHandlers | undefined;

  async open(to: SignalChannel, handlers: SignalHandlers): Promise<void> {
    if (!this.up) throw new Error('ECONNREFUSED');
    this.opened.push(to);
    this.#handlers = handlers;
  }
  async close(): Promise<void> {
    this.closes += 1;
    this.#handlers = undefined;
  }
  send(signal: NodeSignal) {
    this.#handlers?.signal(signal);
  }
  drop(reason: string) {
    const handlers = this.#handlers;
    this.#handlers = undefined;
    this.up = false;
    handlers?.lost(reason);
  }
}

class MemoryState implements AgentStateStore {
  state: AgentState = { lastSequence: 0 };
  async load() {
    return this.state;
  }
  async save(state: AgentState) {
    this.state = state;
  }
  async writeDeclaration() {
    return '/dir/declaration.json';
  }
  good: GoodDeclaration | undefined;
  async readDeclaration() {
    return { path: '/dir/declaration.json', body: undefined };
  }
  async keepGood(good: GoodDeclaration) {
    this.good = good;
  }
  async lastGood() {
    return this.good;
  }
}

/**
 * Runs the agent on a fake clock until `steps` waits have passed. `onWait` acts during each
 * wait (a push, a signal, the broker going); a wait something woke ends 100 ms in, the others
 * run their full length. `slept` is how long each wait lasted.
 */
async function run(
  steps: number,
  parts: {
    controlPlane: MovingControlPlane;
    broker?: FakeBroker;
    channel?: SignalChannel;
    onWait?: (step: number, clock: number) => void;
    /** Whether the apply of a revision succeeds. @default every one does */
    applies?: (revision: number) => boolean;
  },
) {
  let clock = 0;
  const waits: number[] = [];
  const slept: number[] = [];
  const lines: string[] = [];
  const kept: SignalChannel[] = [];
  const controller = new AbortController();
  await runHostAgent({
    controlPlane: parts.controlPlane,
    opener: { open: async (body) => ({ ok: true, body }) },
    applier: {
      apply: async (_path, revision) =>
        (parts.applies ?? (() => true))(revision)
          ? { ok: true }
          : { ok: false, reason: 'the apply command exited 3' },
    },
    state: new MemoryState(),
    intervalMs: 30_000,
    heartbeatMs: 180_000,
    safetyIntervalMs: 6 * 3_600_000,
    ...(parts.broker ? { signalLink: parts.broker } : {}),
    ...(parts.channel ? { channel: parts.channel } : {}),
    onChannel: async (named) => {
      kept.push(named);
    },
    log: (said) => lines.push(said.message),
    signal: controller.signal,
    now: () => clock,
    random: () => 0.5,
    sleep: async (ms, woken) => {
      waits.push(ms);
      parts.onWait?.(waits.length, clock);
      const lasted = woken.aborted ? Math.min(ms, 100) : ms;
      slept.push(lasted);
      clock += lasted;
      if (waits.length >= steps) controller.abort();
    },
  });
  return { waits, slept, lines, kept };
}

describe('runHostAgent on the signal', () => {
  it('fetches once on connecting, then when a signal names a change, and not for one naming what it applied', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.revision = 1;
    const broker = new FakeBroker();

    const { lines, slept } = await run(3, {
      controlPlane,
      broker,
      channel,
      onWait: (step) => {
        if (step === 1) broker.send({ revision: 1, etag: '"r1"' });
        if (step === 2) {
          controlPlane.revision = 2;
          broker.send({ revision: 2, etag: '"r2"' });
        }
      },
    });

    expect(broker.opened).toEqual([channel]);
    // the connect's fetch, the safety fetch after the first (unwoken) wait, the woken one
    expect(slept.slice(0, 2)).toEqual([21_600_000, 100]);
    expect(controlPlane.fetches).toBe(3);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['applying', 1],
      ['applied', 1],
      ['applying', 2],
      ['applied', 2],
    ]);
    expect(lines).toContain(
      'on the signal at mqtt://127.0.0.1:4601: waiting for a change, fetching now to catch up',
    );
    expect(lines).toContain('signal: revision 2 was sent; fetching it');
    expect(lines).not.toContain('signal: revision 1 was sent; fetching it');
  });

  it('after a failed apply waits a minute before trying it again, and a signal naming a change ends that wait', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.revision = 1;
    const broker = new FakeBroker();

    const { slept } = await run(2, {
      controlPlane,
      broker,
      channel,
      applies: (revision) => revision !== 1,
      onWait: (step) => {
        if (step === 1) {
          controlPlane.revision = 2;
          broker.send({ revision: 2, etag: '"r2"' });
        }
      },
    });

    // the failure's wait, woken by the signal, not the minute it would have lasted
    expect(slept[0]).toBe(100);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['applying', 1],
      ['failed', 1],
      ['applying', 2],
      ['applied', 2],
    ]);
  });

  it('after a failed apply waits out the minute while nothing is said, then tries the same revision again', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.revision = 1;
    const broker = new FakeBroker();

    const { waits } = await run(2, {
      controlPlane,
      broker,
      channel,
      applies: () => controlPlane.fetches > 1,
    });

    expect(waits[0]).toBe(60_000);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['applying', 1],
      ['failed', 1],
      ['applying', 1],
      ['applied', 1],
    ]);
  });

  it('sends a report the control plane could not take again after a short wait, not at the next signal or safety fetch', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.revision = 1;
    controlPlane.refuseReports = 3;
    const broker = new FakeBroker();

    const { waits, lines } = await run(4, { controlPlane, broker, channel });

    expect(lines).toContain(
      'report applied of revision 1 is waiting to be sent: the control plane said try again (503 try_again)',
    );
    // applying, then applied twice, refused; the applied report then goes at the third wait
    expect(controlPlane.refused).toBe(3);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([['applied', 1]]);
    // backing off from a second (jitter at its middle); once nothing waits, to the safety fetch
    // the catch-up fetch set
    expect(waits).toEqual([1_500, 3_000, 21_600_000 - 4_500, 21_600_000]);
    // the catch-up fetch, then only the safety fetch: no fetch carried the report
    expect(controlPlane.fetches).toBe(2);
  });

  it('waits for the safety interval while nothing changes, then fetches anyway, and never sends a heartbeat', async () => {
    const controlPlane = new MovingControlPlane();
    const broker = new FakeBroker();

    const { waits } = await run(3, { controlPlane, broker, channel });

    expect(waits).toEqual([21_600_000, 21_600_000, 21_600_000]);
    expect(controlPlane.fetches).toBe(3);
    expect(controlPlane.reports).toEqual([]);
  });

  it('polls at the interval with heartbeats while the broker is away, asks it again with backoff, and returns to the signal', async () => {
    const controlPlane = new MovingControlPlane();
    const broker = new FakeBroker();
    let away = 0;

    const { lines, waits } = await run(30, {
      controlPlane,
      broker,
      channel,
      onWait: (step) => {
        if (step === 1) broker.drop('ECONNRESET');
        if (!broker.up) away += 1;
        if (away === 25) broker.up = true;
        if (step === 28) {
          controlPlane.revision = 3;
          broker.send({ revision: 3, etag: '"r3"' });
        }
      },
    });

    expect(lines).toContain(
      "lost the broker (ECONNRESET); reconnecting in 15.0 s (a fleet's reconnects spread over a window), polling every 30 s until it is back",
    );
    expect(lines).toContain(
      'the broker at mqtt://127.0.0.1:4601 cannot be reached (ECONNREFUSED); polling every 30 s until it is back',
    );
    expect(lines).toContain(
      'the broker is back: on the signal again at mqtt://127.0.0.1:4601, polling stopped',
    );
    // the first reconnect at a random moment of the 30 s window (its middle: 15 s after the loss,
    // 0.1 s of it on the catch-up fetch), then attempts back off (jitter at its middle): 1.5, 3, 6 s
    expect(waits.slice(1, 5)).toEqual([14_900, 1_500, 3_000, 6_000]);
    expect(Math.max(...waits.slice(1, 25))).toBeLessThanOrEqual(30_000);
    expect(broker.opened).toHaveLength(2);
    expect(controlPlane.reports.some((report) => report.state === 'heartbeat')).toBe(true);
    expect(controlPlane.reports.at(-1)).toMatchObject({ state: 'applied', revision: 3 });
  });

  it('falls back to polling when the connection is lost, fetching at once to catch up', async () => {
    const controlPlane = new MovingControlPlane();
    const broker = new FakeBroker();

    const { lines, waits } = await run(4, {
      controlPlane,
      broker,
      channel,
      onWait: (step) => {
        if (step === 1) {
          controlPlane.revision = 4;
          broker.drop('the broker closed the connection');
        }
      },
    });

    expect(lines).toContain(
      "lost the broker (the broker closed the connection); reconnecting in 15.0 s (a fleet's reconnects spread over a window), polling every 30 s until it is back",
    );
    expect(controlPlane.reports.map((report) => report.state)).toEqual(['applying', 'applied']);
    expect(waits[1]).toBeLessThanOrEqual(30_000);
  });

  it('learns the channel from the declaration route, keeps it, and connects to it', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.names = channel;
    const broker = new FakeBroker();

    const { kept, lines } = await run(2, { controlPlane, broker });

    expect(kept).toEqual([channel]);
    expect(broker.opened).toEqual([channel]);
    expect(lines).toContain('the control plane named the broker: mqtt://127.0.0.1:4601');
  });

  it('moves to another broker when the control plane names one', async () => {
    const controlPlane = new MovingControlPlane();
    const broker = new FakeBroker();

    await run(3, {
      controlPlane,
      broker,
      channel,
      onWait: (step) => {
        if (step === 1) {
          controlPlane.names = moved;
          broker.drop('the broker closed the connection');
          broker.up = true;
        }
      },
    });

    expect(broker.opened).toEqual([channel, moved]);
  });

  it('polls, as before, without a link to the broker, whatever the control plane names', async () => {
    const controlPlane = new MovingControlPlane();
    controlPlane.names = channel;

    const { waits } = await run(3, { controlPlane, channel });

    expect(waits).toEqual([30_000, 30_000, 30_000]);
    expect(controlPlane.fetches).toBe(3);
  });
});
