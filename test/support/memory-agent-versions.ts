import {
  type AgentFields,
  addAsked,
  distinctVersions,
  restoringVersion,
  settingVersion,
  versionAsked,
} from '../../lib/server/core/mesh/agent-before.ts';
import type { AgentAsking, AgentVersions, HostsAsked } from '../../lib/server/core/mesh/ports.ts';

/**
 * The agent versions asked of each node, in memory, by the rule the DynamoDB adapter keeps
 * (core/mesh/agent-before.ts): `reported` is what each host last said it runs.
 */
export class MemoryAgentVersions implements AgentVersions {
  readonly items = new Map<string, AgentFields>();
  readonly reported = new Map<string, string>();
  /** The architecture each host last said it runs; a host absent said none. */
  readonly arches = new Map<string, string>();
  /** Every call, as `set V on a b` or `restore V on a b`. */
  readonly calls: string[] = [];

  constructor(nodes: readonly string[]) {
    for (const node of nodes) this.items.set(node, {});
  }

  async setAgentVersion(
    version: string,
    nodes: readonly string[],
    rollout: string,
    limit: number,
  ): Promise<readonly string[]> {
    this.calls.push(`set ${version} on ${nodes.join(' ')}`);
    const before = nodes.flatMap((node) => {
      const item = this.items.get(node);
      if (!item) return [];
      const setting = settingVersion(item, this.reported.get(node), version, rollout);
      if (setting.write) this.items.set(node, setting.write);
      return [setting.before];
    });
    return distinctVersions(before, limit);
  }

  async restoreAgentVersion(rollout: string, version: string, nodes: readonly string[]): Promise<void> {
    this.calls.push(`restore ${version} on ${nodes.join(' ')}`);
    for (const node of nodes) {
      const item = this.items.get(node);
      const back = item && restoringVersion(item, rollout, version);
      if (back) this.items.set(node, back);
    }
  }

  async askedOf(nodes: readonly string[], asking: AgentAsking): Promise<HostsAsked> {
    const asked = new Map<string, Map<string | null, string[]>>();
    for (const node of nodes)
      addAsked(asked, node, versionAsked(this.items.get(node), asking), this.arches.get(node) ?? null);
    return asked;
  }
}
