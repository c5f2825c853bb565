import * as z from 'zod';

/**
 * A node's health, as its host reports it and the control plane keeps it (docs/host-agent.md,
 * "Health"): what the host's check command said of the revision it applied. `healthy` and
 * `unhealthy` are the check's verdicts; `unknown` is a host with no check, or one whose check has
 * not passed yet within its grace after an apply (`check: true`: a wave waits on it).
 */
export const healthStates = ['healthy', 'unhealthy', 'unknown'] as const;
export type HealthState = (typeof healthStates)[number];

/**
 * The outputs a report carries, together: the apply command's stderr and the check's output,
 * each cut to its end, at most this many UTF-8 bytes in all, with every secret of the
 * declaration redacted by the host (lib/clients/host/agent/output-tail.ts).
 */
export const maxOutputBytes = 4096;

/** What a reason (the first line of a check's output, or how it ended) may hold. */
export const maxReasonChars = 200;

/**
 * Tab and newline, and no other control character: an output is printed on operators'
 * terminals and in the console, where an escape sequence would act, not show.
 */
export function isControlCharacter(code: number): boolean {
  return (code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f);
}

const hasControlCharacter = (text: string) => {
  for (let at = 0; at < text.length; at += 1) if (isControlCharacter(text.charCodeAt(at))) return true;
  return false;
};

const bytesOf = (text: string) => Buffer.byteLength(text, 'utf8');

const printableText = (max: number, what: string) =>
  z
    .string()
    .min(1)
    .refine((text) => bytesOf(text) <= max, { message: `${what} is at most ${max} bytes of UTF-8` })
    .refine((text) => !hasControlCharacter(text), {
      message: `${what} holds no control character but tab and newline`,
    });

export const reportedHealth = z.strictObject({
  state: z.enum(healthStates),
  /** Whether the host runs a check (`mesh-host run --check`). */
  check: z.boolean(),
  /** The revision the host had applied when it judged: the one the verdict is about. */
  revision: z.number().int().nonnegative(),
  /** When the check last ran, by the host's clock. */
  checkedAt: z.iso.datetime({ offset: true }).optional(),
  /** While unhealthy: the first line of the check's output, or how it ended (`the check exited 1`). */
  reason: z
    .string()
    .min(1)
    .max(maxReasonChars)
    .refine((text) => !hasControlCharacter(text) && !text.includes('\n'), {
      message: 'health.reason is one line, with no control character',
    })
    .optional(),
});

export const reportedOutput = z
  .strictObject({
    /** The end of the apply command's stderr, of the apply (or revert) this report is about. */
    apply: printableText(maxOutputBytes, 'output.apply').optional(),
    /** The end of the check's output (stdout and stderr), of its last run. */
    check: printableText(maxOutputBytes, 'output.check').optional(),
  })
  .refine((output) => bytesOf(output.apply ?? '') + bytesOf(output.check ?? '') <= maxOutputBytes, {
    message: `output.apply and output.check are at most ${maxOutputBytes} bytes together`,
  });

/**
 * failed: the new revision's apply command failed; unhealthy: its check did not pass within the
 * grace; cut-off: the host could not reach the control plane for the cut-off after applying it.
 */
export const revertCauses = ['failed', 'unhealthy', 'cut-off'] as const;
export type RevertCause = (typeof revertCauses)[number];

export type ReportedHealth = z.infer<typeof reportedHealth>;
export type ReportedOutput = z.infer<typeof reportedOutput>;

/** A failed rollout node's step for a node found unhealthy: `unhealthy: <reason>`, as a report's step is bounded. */
export const unhealthyStep = (reason: string | undefined) =>
  `unhealthy: ${reason ?? 'the check did not pass'}`.slice(0, 200);
