import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { BuiltExecutable } from './executable.ts';
import { renderHostUnit } from './systemd-unit.ts';
import { projectRoot, type Target } from './targets.ts';

const exec = promisify(execFile);

/**
 * `.deb` and `.rpm` packages of `mesh-host` for a fleet's package manager: the executable in
 * /usr/bin, the systemd unit naming it, the `mesh-host` system user and group (for a site that
 * runs the agent as that user with a drop-in, `User=mesh-host`; the unit as shipped runs it as
 * root, since the apply hook configures the machine), the data folder /var/lib/mesh-host (0700)
 * and /etc/mesh-host for the apply hook and its environment. xz compressed: the executable is
 * mostly Node's own code, which xz takes to about a third. Neither package enables the service:
 * the agent has nothing to run until the machine is enrolled (docs/host-agent.md, "Packages").
 */

export const packagedExecutable = '/usr/bin/mesh-host';
export const dataFolder = '/var/lib/mesh-host';
export const configFolder = '/etc/mesh-host';

/**
 * xz's preset for both formats: 6 (xz's own default) takes the x64 executable of 122 MiB to
 * 28 MiB; 0 to 35 MiB in a sixth of the time, for a build that is only looked at (the package
 * test).
 */
export const defaultXzLevel = 6;

export type LinuxPackage = {
  readonly format: 'deb' | 'rpm';
  readonly name: string;
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly target: Target;
  /** The bare executable packed into it, to compare sizes with. */
  readonly executableBytes: number;
  readonly seconds: number;
};

/** Debian's and RPM's names for the architecture. */
const debArch = { x64: 'amd64', arm64: 'arm64' } as const;
const rpmArch = { x64: 'x86_64', arm64: 'aarch64' } as const;

/** Which of the two package builders this machine has: each is skipped, and said so, without its tool. */
export async function packageTools(): Promise<{ deb: boolean; rpm: boolean }> {
  const has = (command: string) =>
    exec('sh', ['-c', `command -v ${command}`]).then(
      () => true,
      () => false,
    );
  return { deb: await has('dpkg-deb'), rpm: await has('rpmbuild') };
}

async function version(): Promise<string> {
  return (JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
}

const summary = 'Mesh host agent: applies this node’s declaration and reports back';
const description = [
  'mesh-host enrols this machine with a Mesh control plane, fetches what its node is sent,',
  'applies it with the operator’s command and reports back. Enrol it, put the apply command',
  'in /etc/mesh-host/apply, then: systemctl enable --now mesh-host',
];

/** The user and folders, as both packages make them before (rpm) or after (deb) unpacking. */
const makeUserAndFolders = `getent group mesh-host >/dev/null || groupadd --system mesh-host
getent passwd mesh-host >/dev/null || useradd --system --gid mesh-host --home-dir ${dataFolder} --no-create-home --shell /usr/sbin/nologin --comment "Mesh host agent" mesh-host
install -d -m 0700 ${dataFolder}
install -d -m 0755 ${configFolder}`;

/** The `.deb`: `dpkg-deb --build` with xz, files owned by root. */
export async function buildDeb(
  executable: BuiltExecutable,
  outDir: string,
  xzLevel = defaultXzLevel,
): Promise<LinuxPackage> {
  const started = performance.now();
  const pkgVersion = await version();
  const arch = debArch[executable.target.arch];
  const name = `mesh-host_${pkgVersion}_${arch}.deb`;
  const root = await mkdtemp(join(tmpdir(), 'mesh-deb-'));
  try {
    // The package's root is the machine's `/`: never packed as mkdtemp's 0700.
    await chmod(root, 0o755);
    await mkdir(join(root, 'DEBIAN'));
    await mkdir(join(root, 'usr/bin'), { recursive: true });
    await mkdir(join(root, 'lib/systemd/system'), { recursive: true });
    await copyFile(executable.path, join(root, 'usr/bin/mesh-host'));
    await chmod(join(root, 'usr/bin/mesh-host'), 0o755);
    await writeFile(
      join(root, 'lib/systemd/system/mesh-host.service'),
      await renderHostUnit(packagedExecutable),
    );
    const installedKib = Math.ceil(executable.bytes / 1024) + 4;
    await writeFile(
      join(root, 'DEBIAN/control'),
      [
        'Package: mesh-host',
        `Version: ${pkgVersion}`,
        `Architecture: ${arch}`,
        'Maintainer: Mesh <mesh@localhost>',
        'Depends: passwd',
        'Section: admin',
        'Priority: optional',
        `Installed-Size: ${installedKib}`,
        `Description: ${summary}`,
        ...description.map((line) => ` ${line}`),
        '',
      ].join('\n'),
    );
    await script(
      join(root, 'DEBIAN/postinst'),
      `if [ "$1" = configure ]; then
${makeUserAndFolders}
  if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi`,
    );
    await script(
      join(root, 'DEBIAN/prerm'),
      `if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl disable --now mesh-host.service || true
fi`,
    );
    // Purge takes the node's keys and state with it: the node enrols again with a new token.
    await script(
      join(root, 'DEBIAN/postrm'),
      `if [ "$1" = purge ]; then rm -rf ${dataFolder}; fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi`,
    );
    const path = join(outDir, name);
    await exec('dpkg-deb', ['--root-owner-group', '-Zxz', `-z${xzLevel}`, '--build', root, path], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return described('deb', name, path, executable, started);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** The `.rpm`: `rpmbuild -bb` for the target's architecture, with an xz payload, from the built executable. */
export async function buildRpm(
  executable: BuiltExecutable,
  outDir: string,
  xzLevel = defaultXzLevel,
): Promise<LinuxPackage> {
  const started = performance.now();
  const pkgVersion = await version();
  const arch = rpmArch[executable.target.arch];
  const top = await mkdtemp(join(tmpdir(), 'mesh-rpm-'));
  try {
    await mkdir(join(top, 'SOURCES'), { recursive: true });
    await copyFile(executable.path, join(top, 'SOURCES/mesh-host'));
    await writeFile(join(top, 'SOURCES/mesh-host.service'), await renderHostUnit(packagedExecutable));
    const spec = join(top, 'mesh-host.spec');
    await writeFile(
      spec,
      `Name: mesh-host
Version: ${pkgVersion.replaceAll('-', '~')}
Release: 1
Summary: ${summary}
License: Proprietary
AutoReqProv: no
Requires(pre): /usr/sbin/useradd, /usr/sbin/groupadd, /usr/bin/getent
Source0: mesh-host
Source1: mesh-host.service
# A prebuilt single executable: nothing to strip, no debug package, no build-id links.
%define debug_package %{nil}
%define __os_install_post %{nil}
%define _build_id_links none
%define _binary_payload w${xzLevel}.xzdio

%description
${description.join('\n')}

%install
install -D -m 0755 %{SOURCE0} %{buildroot}${packagedExecutable}
install -D -m 0644 %{SOURCE1} %{buildroot}/usr/lib/systemd/system/mesh-host.service
install -d -m 0700 %{buildroot}${dataFolder}
install -d -m 0755 %{buildroot}${configFolder}

%pre
${makeUserAndFolders}

%post
if [ -d /run/systemd/system ]; then systemctl daemon-reload || :; fi

%preun
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then systemctl disable --now mesh-host.service || :; fi

%files
${packagedExecutable}
/usr/lib/systemd/system/mesh-host.service
%dir %attr(0700,root,root) ${dataFolder}
%dir %attr(0755,root,root) ${configFolder}
`,
    );
    await exec('rpmbuild', ['-bb', '--target', arch, '--define', `_topdir ${top}`, '--quiet', spec], {
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, LANG: 'C' },
    });
    const built = join(top, 'RPMS', arch);
    const [file] = (await readdir(built)).filter((entry) => entry.endsWith('.rpm'));
    if (!file) throw new Error(`rpmbuild wrote no package into ${built}`);
    const path = join(outDir, file);
    await copyFile(join(built, file), path);
    return described('rpm', file, path, executable, started);
  } finally {
    await rm(top, { recursive: true, force: true });
  }
}

async function script(path: string, body: string): Promise<void> {
  await writeFile(path, `#!/bin/sh\nset -e\n${body}\n`);
  await chmod(path, 0o755);
}

async function described(
  format: LinuxPackage['format'],
  name: string,
  path: string,
  executable: BuiltExecutable,
  started: number,
): Promise<LinuxPackage> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return {
    format,
    name,
    path,
    bytes: (await stat(path)).size,
    sha256: hash.digest('hex'),
    target: executable.target,
    executableBytes: executable.bytes,
    seconds: (performance.now() - started) / 1000,
  };
}

/** `built  mesh-host_0.1.0_amd64.deb  28.4 MiB  (the executable 121.9 MiB, 23%)`: the download beside the bare executable. */
export function describePackage(pkg: LinuxPackage): string {
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  const share = Math.round((pkg.bytes / pkg.executableBytes) * 100);
  return `built  ${pkg.name}  ${mb(pkg.bytes)}  (the executable ${mb(pkg.executableBytes)}, ${share}%)  (${pkg.seconds.toFixed(1)} s)`;
}
