import { basename, join, resolve } from 'node:path';
import { publicKeyText, releaseKeyText } from '../../lib/server/core/agent-release/release.ts';
import { developmentReleaseKey } from './development-release-key.ts';
import {
  type BuiltExecutable,
  type Bundle,
  buildExecutable,
  buildInfoHere,
  bundleEntry,
} from './executable.ts';
import { buildDeb, buildRpm, describePackage, type LinuxPackage, packageTools } from './linux-packages.ts';
import { nodeBinaryFor, pinnedNode } from './node-binaries.ts';
import { type ReleaseArtifact, releaseSigningKey, writeRelease } from './release-artifacts.ts';
import { type UnitVerification, verifyHostUnit, writeHostUnit } from './systemd-unit.ts';
import {
  type ExecutableSpec,
  executableNamed,
  executables,
  projectRoot,
  type Target,
  targets,
} from './targets.ts';

export const defaultOutDir = join(projectRoot, 'dist');

export type PackageOptions = {
  readonly outDir?: string;
  readonly targets?: readonly Target[];
  readonly executables?: readonly ExecutableSpec[];
  /** Write (and verify) the systemd unit. @default true */
  readonly unit?: boolean;
  /** Make the `.deb` and `.rpm` of each mesh-host built (linux-packages.ts). @default true */
  readonly packages?: boolean;
  /** xz's preset for the packages, 0 to 9. @default 6 */
  readonly xzLevel?: number;
  /**
   * The release keys (Ed25519, base64 SPKI) built into mesh-host: the releases it takes are
   * those signed by one of them. Required to build mesh-host (PackagingError without).
   */
  readonly releaseKeys?: readonly string[];
  /**
   * A release key's private half (PEM): each mesh-host built is also written as a release
   * `mesh agent publish` takes (release-artifacts.ts), compressed and signed. Absent, none is.
   */
  readonly signingKeyPem?: string;
  /** With a signing key: write releases hosts download uncompressed (for agents from before compressed ones). @default false */
  readonly uncompressedRelease?: boolean;
  readonly log?: (line: string) => void;
};

/** `npm run package` cannot make what it was asked: the message says what to give it. */
export class PackagingError extends Error {
  override name = 'PackagingError';
}

export type PackageResult = {
  readonly nodeVersion: string;
  readonly outDir: string;
  readonly bundles: ReadonlyArray<{ readonly executable: string } & Bundle>;
  readonly executables: readonly BuiltExecutable[];
  readonly unit?: { readonly path: string; readonly verification: UnitVerification };
  /** The `.deb` and `.rpm` packages of mesh-host, each with its size beside the bare executable's. */
  readonly packages: readonly LinuxPackage[];
  /** Formats not made for want of their tool on this machine, saying which. */
  readonly packagesSkipped: readonly string[];
  /** The releases of mesh-host written, with a signing key. */
  readonly releases: readonly ReleaseArtifact[];
  readonly seconds: number;
};

/**
 * `npm run package`: every executable for every target into OUT (default dist/), each with its
 * checksum, and the systemd unit for mesh-host, verified when systemd-analyze is there.
 */
export async function packageMesh(options: PackageOptions = {}): Promise<PackageResult> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const releaseKeys = options.releaseKeys ?? [];
  const chosen = options.executables ?? executables;
  if (chosen.some((spec) => spec.name === 'mesh-host')) {
    if (releaseKeys.length === 0)
      throw new PackagingError(
        'no release key to build into mesh-host: it takes only releases signed by one (docs/host-agent.md#releases); give --release-keys KEY[,KEY] or MESH_RELEASE_KEYS (base64 SPKI of Ed25519 public keys)',
      );
    const bad = releaseKeys.filter((key) => !releaseKeyText.safeParse(key).success);
    if (bad.length > 0)
      throw new PackagingError(`not an Ed25519 public key (base64 SPKI): ${bad.join(', ')}`);
    if (releaseKeys.includes(developmentReleaseKey.publicKey))
      log(
        'WARNING: mesh-host trusts the development release key, whose private half is in the source: for tests only',
      );
  }
  const outDir = resolve(options.outDir ?? defaultOutDir);
  const pinned = await pinnedNode();
  const chosenTargets = options.targets ?? targets;
  const bases = new Map<string, string>();
  for (const target of chosenTargets) bases.set(target.name, await nodeBinaryFor(target, pinned, log));

  const bundles: Array<{ executable: string } & Bundle> = [];
  const built: BuiltExecutable[] = [];
  for (const spec of chosen) {
    const bundle = await bundleEntry(spec, spec.name === 'mesh-host' ? releaseKeys : []);
    bundles.push({ executable: spec.name, ...bundle });
    // One target's postject runs while the other's does (each is single-threaded WebAssembly).
    const forTargets = await Promise.all(
      chosenTargets.map((target) =>
        buildExecutable({ spec, target, bundle, pinned, base: bases.get(target.name) as string, outDir }),
      ),
    );
    for (const executable of forTargets) log(describeBuilt(executable));
    built.push(...forTargets);
  }

  const packages: LinuxPackage[] = [];
  const packagesSkipped: string[] = [];
  if (options.packages ?? true) {
    const tools = await packageTools();
    if (!tools.deb) packagesSkipped.push('deb: dpkg-deb is not installed (Debian: apt-get install dpkg)');
    if (!tools.rpm) packagesSkipped.push('rpm: rpmbuild is not installed (Debian: apt-get install rpm)');
    for (const line of packagesSkipped) log(`skipped ${line}`);
    for (const executable of built.filter((entry) => entry.executable === 'mesh-host')) {
      // One format's xz runs while the other's does.
      const made = await Promise.all([
        ...(tools.deb ? [buildDeb(executable, outDir, options.xzLevel)] : []),
        ...(tools.rpm ? [buildRpm(executable, outDir, options.xzLevel)] : []),
      ]);
      for (const pkg of made) log(describePackage(pkg));
      packages.push(...made);
    }
  }

  const releases: ReleaseArtifact[] = [];
  if (options.signingKeyPem) {
    const signing = releaseSigningKey(options.signingKeyPem);
    if (signing instanceof Error) throw new PackagingError(`--sign-key: ${signing.message}`);
    const signer = publicKeyText(signing);
    if (!releaseKeys.includes(signer))
      log(
        `WARNING: the signing key is not among the release keys built into mesh-host (${signer.slice(0, 16)}…): hosts built here refuse its releases`,
      );
    const info = await buildInfoHere();
    // One target's Brotli runs while the other's does.
    const written = await Promise.all(
      built
        .filter((entry) => entry.executable === 'mesh-host')
        .map((executable) =>
          writeRelease(executable, info, signing, { compress: options.uncompressedRelease !== true }),
        ),
    );
    for (const release of written) log(describeRelease(release));
    releases.push(...written);
  }

  let unit: PackageResult['unit'];
  if (options.unit ?? true) {
    const path = await writeHostUnit(outDir);
    // verify wants ExecStart to exist: a mesh-host that runs here, else the pinned Node.
    const runnable = built.find(
      (entry) => entry.executable === 'mesh-host' && entry.target.machine === pinned.machine,
    );
    const verification = await verifyHostUnit(runnable?.path ?? pinned.path);
    unit = { path, verification };
    log(describeUnit(path, verification));
  }
  return {
    nodeVersion: pinned.version,
    outDir,
    bundles,
    executables: built,
    ...(unit ? { unit } : {}),
    packages,
    packagesSkipped,
    releases,
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * One executable for this machine in dist/, built unless a current build is already there:
 * what beds and benches run, so they test the artifact an operator installs.
 */
export async function ensureExecutable(
  name: ExecutableSpec['name'],
  log?: (line: string) => void,
): Promise<BuiltExecutable> {
  const pinned = await pinnedNode();
  const target = targets.find((candidate) => candidate.machine === pinned.machine);
  if (!target) throw new Error(`Mesh ships no executable for this machine (ELF machine ${pinned.machine})`);
  const result = await packageMesh({
    targets: [target],
    executables: [executableNamed(name) as ExecutableSpec],
    unit: false,
    packages: false,
    releaseKeys: [developmentReleaseKey.publicKey],
    ...(log ? { log } : {}),
  });
  return result.executables[0] as BuiltExecutable;
}

function describeRelease(release: ReleaseArtifact): string {
  const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `release ${basename(release.transferPath)}: ${mib(release.transferBytes)} to download (${((release.transferBytes / release.bytes) * 100).toFixed(0)}% of ${mib(release.bytes)}), signed in ${basename(release.manifestPath)} (${release.seconds.toFixed(1)} s)`;
}

export function describeBuilt(executable: BuiltExecutable): string {
  const megabytes = (executable.bytes / 1024 / 1024).toFixed(1);
  return `${executable.reused ? 'reused' : 'built '} ${executable.name}  ${megabytes} MiB  sha256 ${executable.sha256.slice(0, 16)}…  (${executable.seconds.toFixed(1)} s)`;
}

function describeUnit(file: string, verification: UnitVerification): string {
  const path = basename(file);
  if (verification.outcome === 'unavailable') return `wrote  ${path}; not verified: ${verification.reason}`;
  if (verification.outcome === 'refused') {
    return `wrote  ${path}; systemd-analyze verify REFUSED it (exit ${verification.code}):\n${verification.output}`;
  }
  const ignored =
    verification.notes.length > 0
      ? '; it ignores RestartSteps/RestartMaxDelaySec, the backoff needs systemd 254'
      : '';
  return `wrote  ${path}; systemd-analyze verify passed (systemd ${verification.systemd}${ignored})`;
}
