import * as z from 'zod';
import { isControlCharacter } from '../health.ts';
import { type Labels, labelValue, type Selector } from './labels.ts';

/** A fact printed on operators' terminals and in the console holds no control character. */
const factText = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine(
      (text) => ![...text].some((c) => isControlCharacter(c.charCodeAt(0))),
      'holds a control character',
    );

/**
 * What a host says about the machine it runs on (docs/host-agent.md, "Facts"): bounded, so a
 * report stays small, and the three a selector matches (`--on agent=1.4.0`, `--on os=debian-12`,
 * `--on arch=arm64`) written as label values are, so a selector reads them back.
 */
export const hostFacts = z.strictObject({
  /** The distribution and its major version as `/etc/os-release` names them: `debian-12`, `rhel-9`. */
  os: labelValue,
  /** The distribution's own name for its version (`12 (bookworm)`). */
  osVersion: factText(100).optional(),
  /** The kernel's release (`uname -r`). */
  kernel: factText(100),
  /** Node's name for the machine: `x64`, `arm64`. */
  arch: labelValue,
  /** The `mesh-host` version, as `mesh-host --version` prints it first. */
  agent: labelValue,
  /** The agent's build (the commit it was packaged from, `source` when run from the tree). */
  build: factText(64).optional(),
  cpus: z.number().int().min(1).max(65_536),
  memoryBytes: z
    .number()
    .int()
    .min(0)
    .max(2 ** 53 - 1),
  /** When the machine booted, to the minute (by its clock). */
  bootedAt: z.iso.datetime({ offset: true }),
  /** What became of the last release this host tried (docs/host-agent.md, "Releases"). */
  upgrade: z
    .strictObject({
      version: labelValue,
      outcome: z.enum(['upgraded', 'rolled-back', 'refused']),
      reason: factText(200).optional(),
      at: z.iso.datetime({ offset: true }),
    })
    .optional(),
});

export type HostFacts = z.infer<typeof hostFacts>;

/** The facts a selector matches, by the key it names them with. */
export const factKeys = ['agent', 'os', 'arch'] as const;

/**
 * The labels a selector is matched against: the node's own, and its host's facts under
 * `agent`, `os` and `arch`. A fact is what the machine is, so it takes the place of a label of
 * the same name (docs/mesh-file.md, "Labels").
 */
export function labelsWithFacts(
  labels: Labels | undefined,
  facts: Pick<HostFacts, (typeof factKeys)[number]> | undefined,
): Labels {
  if (!facts) return labels ?? {};
  return { ...labels, agent: facts.agent, os: facts.os, arch: facts.arch };
}

/**
 * The part of a selector that labels alone answer: what a list may rule nodes out by before
 * their facts are read.
 */
export const labelsPartOf = (selector: Selector): Selector =>
  selector.filter((requirement) => !(factKeys as readonly string[]).includes(requirement.key));
