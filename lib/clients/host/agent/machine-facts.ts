import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { isControlCharacter } from '../../../server/core/health.ts';
import type { HostFacts } from '../../../server/core/mesh/host-facts.ts';
import { buildInfo } from '../../common/build-info.ts';
import { readSlots } from '../release-slots.ts';

/** Where the distribution says what it is (os-release(5)), and where it may instead. */
const osReleasePaths = ['/etc/os-release', '/usr/lib/os-release'];

/**
 * What this machine is, as the host reports it (lib/server/core/mesh/host-facts.ts): read afresh each
 * time, cheaply (one small file and node:os), so a change (a kernel after a reboot, memory
 * added, a distribution upgraded, the agent replaced) is said when it happens.
 */
export async function machineFacts(dir?: string): Promise<HostFacts> {
  const release = await osRelease();
  const upgrade = dir ? (await readSlots(dir)).outcome : undefined;
  const info = buildInfo();
  const osVersion = release.PRETTY_NAME ?? release.VERSION;
  return {
    os: osName(release),
    ...(osVersion ? { osVersion: printable(osVersion).slice(0, 100) } : {}),
    kernel: printable(os.release()).slice(0, 100) || 'unknown',
    arch: labelText(process.arch),
    agent: labelText(info.version),
    build: printable(info.build).slice(0, 64) || 'unknown',
    cpus: Math.max(1, Math.min(65_536, os.availableParallelism())),
    memoryBytes: os.totalmem(),
    bootedAt: bootTime(),
    ...(upgrade
      ? {
          upgrade: {
            version: labelText(upgrade.version),
            outcome: upgrade.outcome,
            ...(upgrade.reason ? { reason: printable(upgrade.reason).slice(0, 200) || 'unknown' } : {}),
            at: upgrade.at,
          },
        }
      : {}),
  };
}

/** `debian-12`, `ubuntu-24.04`, `rhel-9.4`: the distribution's ID and VERSION_ID; the platform when none is said. */
export function osName(release: Readonly<Record<string, string>>): string {
  const id = release.ID;
  if (!id) return labelText(os.platform());
  return labelText(release.VERSION_ID ? `${id}-${release.VERSION_ID}` : id);
}

/** os-release's KEY=value lines, quotes taken off; empty when the machine has none. */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, key = '', raw = ''] = match;
    fields[key] = raw.replace(/^(["'])(.*)\1$/, '$2').replace(/\\(["$`\\])/g, '$1');
  }
  return fields;
}

async function osRelease(): Promise<Record<string, string>> {
  for (const path of osReleasePaths) {
    try {
      return parseOsRelease(await readFile(path, 'utf8'));
    } catch {}
  }
  return {};
}

/** A text made a label value (1 to 63 letters, digits, `.`, `_`, `-`, alphanumeric at both ends), as selectors match it. */
export function labelText(text: string): string {
  const kept = text
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .slice(0, 63)
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return kept || 'unknown';
}

/** Control characters out: a fact is printed on operators' terminals. */
const printable = (text: string) =>
  [...text]
    .filter((character) => !isControlCharacter(character.charCodeAt(0)))
    .join('')
    .trim();

/** To the minute, so the same boot reads the same each time despite the uptime's rounding. */
function bootTime(): string {
  const minute = 60_000;
  const booted = Math.round((Date.now() - os.uptime() * 1000) / minute) * minute;
  return new Date(booted).toISOString();
}
