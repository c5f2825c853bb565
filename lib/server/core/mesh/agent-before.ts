import type { AgentAsking } from './ports.ts';

/**
 * What an agent upgrade takes back (`mesh rollout undo` of `mesh agent upgrade`): each host's
 * version before it is its own, so each node keeps it, by the rollout that set the new one, as its
 * wave sets it (docs/host-agent.md, "Releases"). A node keeps the last few: an undo of an older
 * upgrade still finds its own once a later one was taken back.
 */

/**
 * A node's agent upgrades, by rollout id: the version each set (`set`) and what the host ran
 * before it (`before`; null: none was known).
 */
export type VersionsBefore = Readonly<
  Record<string, { readonly before: string | null; readonly set: string }>
>;

/** The agent fields of a node: the version its host is asked to run, and its versions before. */
export type AgentFields = { readonly agentVersion?: string; readonly agentBefore?: VersionsBefore };

/** How many upgrades a node remembers the version before of: the newest, by rollout id (ids sort by time). */
export const upgradesRemembered = 4;

/**
 * What the host ran before a wave sets it a version: what it last reported running, else the
 * version the mesh asked of it before, else none known (a host that never reported its facts).
 */
const versionBefore = (reported: string | undefined, asked: string | undefined): string | null =>
  reported ?? asked ?? null;

const byId = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

function remembering(
  kept: VersionsBefore | undefined,
  rollout: string,
  entry: VersionsBefore[string],
): VersionsBefore {
  const entries = Object.entries({ ...kept, [rollout]: entry }).sort(byId);
  return Object.fromEntries(entries.slice(-upgradesRemembered));
}

/**
 * ROLLOUT's wave asks VERSION of a node: the fields to write (none when it is asked for VERSION
 * already), and the version it ran before as this rollout knows it (also when an earlier try of
 * the same wave wrote it; none when another rollout did).
 */
export function settingVersion(
  fields: AgentFields,
  reported: string | undefined,
  version: string,
  rollout: string,
): { readonly write?: AgentFields; readonly before?: string | null } {
  if (fields.agentVersion === version) {
    const kept = fields.agentBefore?.[rollout];
    return kept === undefined ? {} : { before: kept.before };
  }
  const before = versionBefore(reported, fields.agentVersion);
  return {
    write: {
      agentVersion: version,
      agentBefore: remembering(fields.agentBefore, rollout, { before, set: version }),
    },
    before,
  };
}

/**
 * The undo of ROLLOUT (which set VERSION) on a node: its fields set back to the version it had,
 * or without a version when none was known; undefined (left as it is) when the rollout never set
 * it one, another version has been asked of it since, or a later upgrade set the one it asks now
 * (A→B, B→A, A→B again: the first one's undo is not the last one's). An earlier upgrade's undo
 * does not undo a later one.
 */
export function restoringVersion(
  fields: AgentFields,
  rollout: string,
  version: string,
): AgentFields | undefined {
  if (fields.agentVersion !== version) return undefined;
  const { [rollout]: entry, ...rest } = fields.agentBefore ?? {};
  if (entry === undefined) return undefined;
  const settingNow = Object.entries(fields.agentBefore ?? {})
    .filter(([, kept]) => kept.set === version)
    .sort(byId)
    .at(-1)?.[0];
  if (settingNow !== rollout) return undefined;
  return {
    ...(entry.before === null ? {} : { agentVersion: entry.before }),
    ...(Object.keys(rest).length > 0 ? { agentBefore: rest } : {}),
  };
}

/** The distinct versions an undo would set back, at most `limit` of them: what it checks are published. */
export function distinctVersions(found: Iterable<string | null | undefined>, limit: number): string[] {
  const versions = new Set<string>();
  for (const version of found)
    if (typeof version === 'string' && versions.size < limit) versions.add(version);
  return [...versions].sort();
}

/**
 * The version a node's host is asked to run by an agent upgrade setting VERSION, or by the undo
 * of ROLLOUT (restoringVersion); undefined when it is asked none (left as it is, or taken away).
 */
export function versionAsked(fields: AgentFields | undefined, asking: AgentAsking): string | undefined {
  if (!fields) return undefined;
  if (asking.kind === 'set') return asking.version;
  return restoringVersion(fields, asking.rollout, asking.version)?.agentVersion;
}

/** Adds a node to what HostsAsked holds: under its version, then its host's architecture. */
export function addAsked(
  asked: Map<string, Map<string | null, string[]>>,
  node: string,
  version: string | undefined,
  arch: string | null,
): void {
  if (version === undefined) return;
  const byArch = asked.get(version) ?? new Map<string | null, string[]>();
  asked.set(version, byArch);
  const nodes = byArch.get(arch) ?? [];
  byArch.set(arch, nodes);
  nodes.push(node);
}
