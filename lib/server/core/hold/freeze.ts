import type { Labels } from '../mesh/labels.ts';
import { matchesSelector, parseSelector, type Selector, selectorText } from '../mesh/labels.ts';
import { FreezeUsageError } from './errors.ts';

/**
 * An operator's hold on nodes (docs/decisions/held-back.md): every node its selector matches (or
 * every node, `--all`) is held back as a halted rollout holds its nodes, until it is lifted or its
 * time passes. A freeze is known by what it holds: one freeze a selector, so `mesh unfreeze --on
 * role=web` names the freeze `mesh freeze --on role=web` made, and freezing it again replaces it.
 */
export type Freeze = {
  /** `all`, or the selector in its one written form (selectorText). */
  readonly on: string;
  readonly reason: string;
  /** When it lifts by itself; absent, it holds until `mesh unfreeze`. */
  readonly until?: string;
  /** The principal who froze, and when. */
  readonly by: string;
  readonly at: string;
};

/** What a freeze is asked for: a selector, or every node. */
export type FreezeTarget = { readonly all: true } | { readonly selector: string };

/** `all`, or the selector written once: the freeze's name and its key in the store. */
export function freezeOn(target: FreezeTarget): string {
  if ('all' in target) return 'all';
  return selectorText(parseSelector(target.selector));
}

/** How a person asks to lift it: what `mesh unfreeze` takes. */
export const unfreezeCommand = (on: string) =>
  on === 'all' ? 'mesh unfreeze --all' : `mesh unfreeze --on ${on}`;

/** How a freeze names itself in `heldBack` (`by`). */
export const freezeHolder = (on: string) => `freeze:${on}`;

/** The most freezes in force at once: each is matched against every node a push sends. */
export const maxFreezes = 100;
/** The longest a freeze may be set to hold by itself (`--until`): longer is `mesh unfreeze`'s job. */
const longestUntilMs = 366 * 24 * 3600_000;

const durationForm = /^(\d{1,6})(m|h|d)$/;
const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * `--until TIME`: an ISO 8601 time with its offset (`2026-12-24T18:00:00Z`), or a duration from
 * now (`90m`, `12h`, `3d`); it must lie ahead, within a year.
 */
export function parseUntil(text: string, now: Date): string {
  const trimmed = text.trim();
  const duration = durationForm.exec(trimmed);
  const at = duration
    ? now.getTime() + Number(duration[1]) * unitMs[duration[2] as keyof typeof unitMs]
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(trimmed)
      ? Date.parse(trimmed)
      : Number.NaN;
  if (Number.isNaN(at))
    throw new FreezeUsageError(
      `--until: "${text}" is neither a time with its offset (2026-12-24T18:00:00Z) nor a duration (90m, 12h, 3d)`,
    );
  if (at <= now.getTime()) throw new FreezeUsageError(`--until: ${text} is not ahead of now`);
  if (at - now.getTime() > longestUntilMs) throw new FreezeUsageError('--until: at most a year ahead');
  return new Date(at).toISOString();
}

/** In force now: not lifted by its time. */
export const inForce = (freeze: Freeze, now: Date) =>
  freeze.until === undefined || Date.parse(freeze.until) > now.getTime();

/** Freezes with their selectors read once, for matching many nodes. */
export type FreezeMatcher = (labels: Labels) => Freeze | undefined;

/** The first of these freezes that holds a node with its labels (`all` before any selector). */
export function freezeMatcher(freezes: readonly Freeze[]): FreezeMatcher {
  const read = [...freezes]
    .sort((a, b) => (a.on === 'all' ? -1 : b.on === 'all' ? 1 : a.on < b.on ? -1 : 1))
    .map((freeze) => ({ freeze, selector: freeze.on === 'all' ? undefined : selectorOf(freeze.on) }));
  return (labels) =>
    read.find(({ selector }) => selector === undefined || matchesSelector(selector, labels))?.freeze;
}

/** A stored selector that no longer reads holds nothing rather than everything. */
function selectorOf(on: string): Selector {
  try {
    return parseSelector(on);
  } catch {
    return [{ key: 'mesh.invalid/selector', op: 'exists' }];
  }
}
