import { describe, expect, it } from 'vitest';
import {
  type EnrolAttempt,
  presentEnrolment,
  sendEnrolment,
  throttledWaitMs,
} from '../../lib/clients/host/enrol.ts';
import { type HttpTransport, NoAnswerError } from '../../lib/clients/http/transport.ts';

/** A control plane that answers from a script, and a clock that only moves when the host sleeps. */
function scripted(answers: EnrolAttempt[], patienceMs = 35_000) {
  const clock = { ms: 0 };
  const sent: number[] = [];
  const sleeps: number[] = [];
  const run = () =>
    presentEnrolment({
      send: async () => {
        sent.push(clock.ms);
        return answers[Math.min(sent.length - 1, answers.length - 1)] as EnrolAttempt;
      },
      sleep: async (ms) => {
        sleeps.push(ms);
        clock.ms += ms;
      },
      now: () => clock.ms,
      random: () => 0.5,
      patienceMs,
    });
  return { run, sent, sleeps };
}

const held = (seconds: number): EnrolAttempt => ({
  kind: 'answer',
  status: 409,
  retryAfter: String(seconds),
  body: { error: { code: 'token_held', message: 'held' } },
});
const storeAway: EnrolAttempt = {
  kind: 'answer',
  status: 503,
  retryAfter: '2',
  body: { error: { code: 'try_again', message: 'away' } },
};
const enrolled: EnrolAttempt = {
  kind: 'answer',
  status: 200,
  retryAfter: null,
  body: { node: 'alpha', thumbprint: 't', enrolledAt: '2026-10-01T12:00:00.000Z' },
};

describe('presentEnrolment', () => {
  it('asks again while told to try again, honouring Retry-After with jitter, until enrolled', async () => {
    const host = scripted([storeAway, held(10), enrolled]);

    const outcome = await host.run();

    expect(outcome).toMatchObject({ kind: 'enrolled', node: 'alpha' });
    expect(host.sent).toHaveLength(3);
    expect(host.sleeps).toEqual([2_500, 10_500]);
  });

  it('stops when its patience runs out and says how long to wait', async () => {
    const host = scripted([held(12)], 35_000);

    const outcome = await host.run();

    expect(outcome).toEqual({ kind: 'wait', waitSeconds: 12, attempts: 3, reason: 'token_held' });
    expect(host.sent).toEqual([0, 12_500, 25_000]);
  });

  it("waits out the firewall's 429 past its patience, doubling from Retry-After, spread over as long again", async () => {
    const throttled: EnrolAttempt = {
      kind: 'answer',
      status: 429,
      retryAfter: '60',
      body: { error: { code: 'THROTTLED', message: 'too many requests from this address' } },
    };
    const host = scripted([throttled, throttled, throttled, throttled, enrolled], 35_000);

    const outcome = await host.run();

    expect(outcome).toMatchObject({ kind: 'enrolled', node: 'alpha' });
    // 60 s, 120 s, 240 s, 480 s, each × 1.5 at random 0.5: past the 35 s patience, within 30 minutes
    expect(host.sleeps).toEqual([90_000, 180_000, 360_000, 720_000]);
  });

  it('spreads the throttled waits of many hosts over [wait, 2 × wait), at most 10 minutes before the spread', () => {
    expect([0, 0.5, 0.999].map((random) => throttledWaitMs(60_000, 1, random))).toEqual([
      60_000, 90_000, 119_940,
    ]);
    expect(throttledWaitMs(60_000, 12, 0)).toBe(600_000);
    expect(throttledWaitMs(0, 1, 0)).toBe(1_000);
  });

  it('gives up on a 429 that lasts past its throttled patience, saying how long to wait', async () => {
    const throttled: EnrolAttempt = { kind: 'answer', status: 429, retryAfter: '60', body: {} };
    const clock = { ms: 0 };
    const outcome = await presentEnrolment({
      send: async () => throttled,
      sleep: async (ms) => {
        clock.ms += ms;
      },
      now: () => clock.ms,
      random: () => 0,
      throttledPatienceMs: 5 * 60_000,
    });
    expect(outcome).toEqual({ kind: 'wait', waitSeconds: 60, attempts: 3, reason: 'http_429' });
  });

  it('keeps asking through a lost answer (timeout) but not through a refused connection', async () => {
    const lost: EnrolAttempt = { kind: 'unreachable', reason: 'TimeoutError', nothingAnswers: false };
    const refused: EnrolAttempt = { kind: 'unreachable', reason: 'ECONNREFUSED', nothingAnswers: true };

    const recovered = await scripted([lost, enrolled]).run();
    const down = scripted([refused]);
    const gone = await down.run();

    expect(recovered.kind).toBe('enrolled');
    expect(gone).toEqual({ kind: 'unreachable', message: 'ECONNREFUSED' });
    expect(down.sent).toHaveLength(1);
  });

  it('ends at once on a refusal, with its reason', async () => {
    const host = scripted([
      {
        kind: 'answer',
        status: 403,
        retryAfter: null,
        body: { error: { code: 'token_spent', message: 'spent' } },
      },
    ]);

    const outcome = await host.run();

    expect(outcome).toEqual({ kind: 'refused', code: 'token_spent', message: 'spent', status: 403 });
    expect(host.sent).toHaveLength(1);
  });

  it('asks again after a 500, which is a failure of the control plane and no refusal, then says to wait', async () => {
    const failed: EnrolAttempt = {
      kind: 'answer',
      status: 500,
      retryAfter: null,
      body: { error: { code: 'internal', message: 'internal error' } },
    };

    const recovered = await scripted([failed, enrolled]).run();
    const stillFailing = await scripted([failed], 5_000).run();

    expect(recovered.kind).toBe('enrolled');
    expect(stillFailing).toEqual({ kind: 'wait', waitSeconds: 2, attempts: 3, reason: 'internal' });
  });
});

describe('sendEnrolment', () => {
  /** A wire on which nothing answers, for the reason a transport gives. */
  const failingWith =
    (reason: string): HttpTransport =>
    async () => {
      throw new NoAnswerError(reason);
    };

  it('says nothing answers for a refused connection or a name that does not resolve, not for a timeout or a reset', async () => {
    const reasons = [
      'ECONNREFUSED',
      'ENOTFOUND',
      'EAI_AGAIN',
      'ETIMEDOUT',
      'ECONNRESET',
      'no answer in 10 s',
    ];

    const answers = await Promise.all(
      reasons.map((reason) => sendEnrolment('https://mesh.example', {}, { transport: failingWith(reason) })),
    );

    expect(answers).toEqual(
      reasons.map((reason, index) => ({ kind: 'unreachable', reason, nothingAnswers: index < 3 })),
    );
  });

  it('posts the body unsigned to /enrol and hands back the answer with its Retry-After', async () => {
    const sent: Array<Parameters<HttpTransport>[0]> = [];
    const holding: HttpTransport = async (request) => {
      sent.push(request);
      return {
        status: 409,
        headers: { get: (name) => (name.toLowerCase() === 'retry-after' ? '12' : null) },
        text: JSON.stringify({ error: { code: 'token_held', message: 'held' } }),
      };
    };
    const body = { node: 'alpha', token: 'mesh_t_x', keys: {} };

    const attempt = await sendEnrolment('https://mesh.example/v1/', body, {
      transport: holding,
      timeoutMs: 2_000,
    });

    expect(attempt).toEqual({
      kind: 'answer',
      status: 409,
      retryAfter: '12',
      body: { error: { code: 'token_held', message: 'held' } },
    });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'POST', body: JSON.stringify(body), timeoutMs: 2_000 });
    expect(sent[0]?.url.href).toBe('https://mesh.example/v1/enrol');
    expect(sent[0]?.headers).not.toHaveProperty('authorization');
  });

  it('is told to wait the Retry-After of a held token, through presentEnrolment', async () => {
    const held: HttpTransport = async () => ({
      status: 409,
      headers: { get: (name) => (name.toLowerCase() === 'retry-after' ? '12' : null) },
      text: JSON.stringify({ error: { code: 'token_held', message: 'held' } }),
    });
    const clock = { ms: 0 };

    const outcome = await presentEnrolment({
      send: () => sendEnrolment('https://mesh.example', {}, { transport: held }),
      sleep: async (ms) => {
        clock.ms += ms;
      },
      now: () => clock.ms,
      random: () => 0,
      patienceMs: 30_000,
    });

    expect(outcome).toEqual({ kind: 'wait', waitSeconds: 12, attempts: 3, reason: 'token_held' });
  });
});
