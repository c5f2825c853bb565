import { execFile, execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { releaseKeyFingerprint } from '../../lib/clients/host/release-keys.ts';
import { installRelease, releasePath } from '../../lib/clients/host/release-slots.ts';
import { signedByTrusted, signedRelease } from '../../lib/server/core/agent-release/release.ts';
import { developmentReleaseKey } from '../../tools/packaging/development-release-key.ts';
import { elfMachines, hasInjectedApplication, readElfHeader } from '../../tools/packaging/elf.ts';
import type { PackageResult } from '../../tools/packaging/package.ts';
import { installedExecutable, renderHostUnit, verifyHostUnit } from '../../tools/packaging/systemd-unit.ts';

const exec = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const artifacts = ['mesh-host-linux-x64', 'mesh-host-linux-arm64', 'mesh-linux-x64', 'mesh-linux-arm64'];

const has = (command: string) => {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const arm64Sysroot = '/usr/aarch64-linux-gnu';
const canEmulateArm64 =
  has('qemu-aarch64') &&
  ['ld-linux-aarch64.so.1', 'libstdc++.so.6'].every((file) => existsSync(join(arm64Sysroot, 'lib', file)));
const canVerifyUnits = has('systemd-analyze');
const canBuildPackages = has('dpkg-deb') && has('rpmbuild');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const packageNames = [
  `mesh-host_${version}_amd64.deb`,
  `mesh-host_${version}_arm64.deb`,
  `mesh-host-${version}-1.x86_64.rpm`,
  `mesh-host-${version}-1.aarch64.rpm`,
] as const;
const packageFiles: readonly string[] = canBuildPackages ? packageNames : [];
/** What a fleet downloads: at most this per package (against 122 MB for the bare executable). */
const packageGoalBytes = 45 * 1024 * 1024;

let out: string;
let keyFolder: string;
let result: PackageResult;
/** What `--sign-key` writes beside each mesh-host: the compressed executable and the signed manifest. */
const releaseFiles = ['mesh-host-linux-x64', 'mesh-host-linux-arm64'].flatMap((name) => [
  `${name}.br`,
  `${name}.release.json`,
]);

/** `npm run package` as an operator runs it, into a folder of its own. */
beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'mesh-package-'));
  keyFolder = mkdtempSync(join(tmpdir(), 'mesh-release-key-'));
  const signKey = join(keyFolder, 'release.pem');
  writeFileSync(signKey, developmentReleaseKey.privateKeyPem, { mode: 0o600 });
  // Exit 1 when systemd-analyze refuses the unit: the JSON still says what was built, and the
  // verify test below shows what systemd-analyze said. xz's fastest preset: the packages are
  // looked into, and their size at it bounds the size at the default. Signed with the
  // development key, so each mesh-host is also written as a release.
  const args = ['bin/package.ts', '--out', out, '--json', '--xz-level', '0', '--sign-key', signKey];
  const { stdout, stderr } = await exec(process.execPath, args, {
    cwd: root,
    // mesh-host is built with the development key the beds sign their releases with
    env: { ...process.env, MESH_RELEASE_KEYS: developmentReleaseKey.publicKey },
    maxBuffer: 16 * 1024 * 1024,
  }).catch((error: { code: number; stdout: string; stderr: string }) => {
    if (error.code !== ExitCode.failed || !error.stdout.includes('{')) throw error;
    return error;
  });
  if (!stdout.includes('{')) throw new Error(`npm run package printed no result:\n${stderr}`);
  result = JSON.parse(stdout.slice(stdout.indexOf('{'))) as PackageResult;
});

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
  if (keyFolder) rmSync(keyFolder, { recursive: true, force: true });
});

describe('npm run package', () => {
  it('writes four executables, a checksum beside each that sha256sum accepts, and the unit', async () => {
    expect(readdirSync(out).sort()).toEqual(
      [
        ...artifacts,
        ...artifacts.map((name) => `${name}.sha256`),
        'mesh-host.service',
        ...packageFiles,
        ...releaseFiles,
      ].sort(),
    );
    for (const name of artifacts) {
      expect(readFileSync(join(out, `${name}.sha256`), 'utf8')).toMatch(
        new RegExp(`^[0-9a-f]{64}  ${name}\n$`),
      );
    }
    const checked = await exec('sha256sum', ['-c', ...artifacts.map((name) => `${name}.sha256`)], {
      cwd: out,
    });
    expect(checked.stdout.trim().split('\n')).toEqual(artifacts.map((name) => `${name}: OK`));
  });

  it('the x64 executables are x86-64 ELF and start with no node, no PATH and no environment', async () => {
    for (const name of ['mesh-host', 'mesh']) {
      const path = join(out, `${name}-linux-x64`);
      expect((await readElfHeader(path)).machine).toBe(elfMachines.x64);
      const { stdout, stderr } = await exec(path, ['--help'], { env: {}, cwd: '/' });
      expect(stdout).toMatch(new RegExp(`^Usage: ${name} `));
      expect(stderr).toBe('');
    }
    const unreachable = await exec(join(out, 'mesh-linux-x64'), ['--api', 'http://127.0.0.1:9', 'status'], {
      env: {},
    }).then(
      () => ({ code: ExitCode.ok, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(unreachable.code).toBe(ExitCode.unavailable);
    expect(unreachable.stderr).toContain('the control plane at http://127.0.0.1:9 could not be reached');
  });

  it('mesh console serves the console’s pages from the executable itself', async () => {
    // a stack that answers the console's first read: no push kept yet
    const stack = createServer((_, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"pushes":[]}');
    });
    await new Promise<void>((listening) => stack.listen(0, '127.0.0.1', listening));
    const api = `http://127.0.0.1:${(stack.address() as AddressInfo).port}`;
    const child = spawn(join(out, 'mesh-linux-x64'), ['--api', api, 'console', '--port', '0'], {
      env: {},
      cwd: '/',
    });
    try {
      const url = await new Promise<string>((resolveUrl, reject) => {
        let seen = '';
        child.stdout.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const found = /http:\/\/127\.0\.0\.1:\d+\/console/.exec(seen);
          if (found) resolveUrl(found[0]);
        });
        child.once('exit', (code) => reject(new Error(`mesh console exited ${code}: ${seen}`)));
      });
      const pages = await Promise.all(['', '/app.js', '/console.css'].map((file) => fetch(`${url}${file}`)));
      expect(pages.map((page) => page.status)).toEqual([200, 200, 200]);
      expect(await pages[0]?.text()).toContain('<script type="module" src="/console/app.js">');
    } finally {
      child.kill();
      stack.close();
    }
  });

  it('the arm64 executables are 64-bit little-endian aarch64 ELF with the application injected', async () => {
    for (const name of ['mesh-host', 'mesh']) {
      const path = join(out, `${name}-linux-arm64`);
      const header = await readElfHeader(path);
      expect(header).toMatchObject({ bits: 64, littleEndian: true, machine: elfMachines.arm64 });
      expect(await hasInjectedApplication(path)).toBe(true);
    }
  });

  it.skipIf(!canEmulateArm64)(
    'the arm64 executables start cleanly under qemu-aarch64 (needs qemu-user and the arm64 cross libc)',
    async () => {
      for (const name of ['mesh-host', 'mesh']) {
        const { stdout, stderr } = await exec(
          'qemu-aarch64',
          ['-L', arm64Sysroot, join(out, `${name}-linux-arm64`), '--help'],
          { env: {} },
        );
        expect(stdout).toMatch(new RegExp(`^Usage: ${name} `));
        // Code cache made on this x64 machine would be rejected there, with a warning on stderr.
        expect(stderr).toBe('');
      }
    },
  );

  it('writes each mesh-host as a signed, compressed release a host installs as the executable itself', async () => {
    expect(result.releases.map((r) => r.executable).sort()).toEqual([
      'mesh-host-linux-arm64',
      'mesh-host-linux-x64',
    ]);
    for (const name of ['mesh-host-linux-x64', 'mesh-host-linux-arm64']) {
      const release = signedRelease.parse(
        JSON.parse(readFileSync(join(out, `${name}.release.json`), 'utf8')),
      );
      const built = result.executables.find((e) => e.name === name);
      expect(release.manifest).toMatchObject({
        version,
        arch: name.endsWith('x64') ? 'x64' : 'arm64',
        sha256: built?.sha256,
        bytes: built?.bytes,
        transfer: { encoding: 'br', bytes: statSync(join(out, `${name}.br`)).size },
      });
      expect(signedByTrusted(release, [developmentReleaseKey.publicKey])).toBe(true);
      // what each host downloads on an upgrade, against the bare executable
      expect(release.manifest.transfer?.bytes).toBeLessThan(packageGoalBytes);
    }
    const dir = mkdtempSync(join(tmpdir(), 'mesh-host-dir-'));
    try {
      const x64 = signedRelease.parse(
        JSON.parse(readFileSync(join(out, 'mesh-host-linux-x64.release.json'), 'utf8')),
      );
      const installed = await installRelease(
        dir,
        x64,
        () => Promise.resolve(createReadStream(join(out, 'mesh-host-linux-x64.br'))),
        {
          builtInKeys: [developmentReleaseKey.publicKey],
          arch: 'x64',
          now: () => new Date(),
        },
      );
      expect(installed).toEqual({ installed: true, version });
      const sum = (await exec('sha256sum', [releasePath(dir, version)])).stdout.split(' ')[0];
      expect(sum).toBe(x64.manifest.sha256);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to build mesh-host without a release key to build in, saying what to give it', async () => {
    const { MESH_RELEASE_KEYS: _none, ...env } = process.env;
    const refused = await exec(
      process.execPath,
      ['bin/package.ts', '--out', out, '--executable', 'mesh-host'],
      {
        cwd: root,
        env,
      },
    ).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: ExitCode.usage });
    expect((refused as { stderr: string }).stderr).toMatch(
      /no release key to build into mesh-host.*--release-keys KEY\[,KEY\] or MESH_RELEASE_KEYS/,
    );
  });

  it('the unit runs mesh-host under its supervisor from /usr/local/bin, keeps state owner-only and does not restart on exit 2 or 9', async () => {
    const unit = readFileSync(join(out, 'mesh-host.service'), 'utf8');
    expect(unit).toBe(await renderHostUnit());
    expect(unit).toContain(
      `ExecStart=${installedExecutable} supervise --dir /var/lib/mesh-host -- run --dir /var/lib/mesh-host --apply /etc/mesh-host/apply`,
    );
    expect(unit).toMatch(/^StateDirectory=mesh-host$/m);
    expect(unit).toMatch(/^StateDirectoryMode=0700$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toContain(`RestartPreventExitStatus=${ExitCode.usage} ${ExitCode.decommissioned}`);
    for (const setting of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ProtectHome=yes',
      'PrivateTmp=yes',
    ]) {
      expect(unit).toMatch(new RegExp(`^${setting}$`, 'm'));
    }
    expect(unit).not.toMatch(/\{\{/);
  });

  it.skipIf(!canVerifyUnits)(
    `systemd-analyze verify passes on the unit${canVerifyUnits ? '' : ': CANNOT RUN, systemd-analyze is not installed (apt-get install systemd)'}`,
    () => {
      expect(result.unit?.verification, JSON.stringify(result.unit?.verification)).toMatchObject({
        outcome: 'passed',
      });
    },
  );

  it.skipIf(!canBuildPackages)(
    `makes a .deb and an .rpm of mesh-host for x64 and arm64, xz compressed, each under 45 MB${canBuildPackages ? '' : ': CANNOT RUN, dpkg-deb or rpmbuild is not installed (apt-get install rpm)'}`,
    async () => {
      expect(result.packages.map((pkg) => pkg.name).sort()).toEqual([...packageFiles].sort());
      for (const pkg of result.packages) {
        expect(pkg.bytes, pkg.name).toBeLessThan(packageGoalBytes);
        expect(pkg.bytes, pkg.name).toBeLessThan(pkg.executableBytes / 2);
      }
      for (const [file, arch] of [
        [packageNames[0], 'amd64'],
        [packageNames[1], 'arm64'],
      ] as const) {
        const info = (await exec('dpkg-deb', ['-I', join(out, file)])).stdout;
        expect(info).toMatch(/^ Package: mesh-host$/m);
        expect(info).toMatch(new RegExp(`^ Architecture: ${arch}$`, 'm'));
        expect(info).toMatch(/^ Depends: passwd$/m);
        expect(info).toMatch(/ postinst /);
        const members = (await exec('ar', ['t', join(out, file)])).stdout.trim().split('\n');
        expect(members).toEqual(['debian-binary', 'control.tar.xz', 'data.tar.xz']);
        const listed = (await exec('dpkg-deb', ['-c', join(out, file)])).stdout;
        expect(listed).toMatch(/^drwxr-xr-x root\/root .* \.\/$/m);
        expect(listed).toMatch(/^-rwxr-xr-x root\/root .* \.\/usr\/bin\/mesh-host$/m);
        expect(listed).toMatch(/^-rw-r--r-- root\/root .* \.\/lib\/systemd\/system\/mesh-host\.service$/m);
        const postinst = (await exec('dpkg-deb', ['-I', join(out, file), 'postinst'])).stdout;
        expect(postinst).toContain('useradd --system --gid mesh-host --home-dir /var/lib/mesh-host');
        expect(postinst).toContain('install -d -m 0700 /var/lib/mesh-host');
      }
      for (const [file, arch] of [
        [packageNames[2], 'x86_64'],
        [packageNames[3], 'aarch64'],
      ] as const) {
        const info = (await exec('rpm', ['-qip', join(out, file)])).stdout;
        expect(info).toMatch(/^Name +: mesh-host$/m);
        expect(info).toMatch(new RegExp(`^Architecture: ${arch}$`, 'm'));
        const query = (format: string) => exec('rpm', ['-qp', '--qf', format, join(out, file)]);
        expect((await query('%{PAYLOADCOMPRESSOR}')).stdout).toBe('xz');
        const files = (await exec('rpm', ['-qlvp', join(out, file)])).stdout;
        expect(files).toMatch(/^-rwxr-xr-x .* root +root .* \/usr\/bin\/mesh-host$/m);
        expect(files).toMatch(/^drwx------ .* root +root .* \/var\/lib\/mesh-host$/m);
        expect(files).toMatch(/\/usr\/lib\/systemd\/system\/mesh-host\.service$/m);
        const scripts = (await exec('rpm', ['-qp', '--scripts', join(out, file)])).stdout;
        expect(scripts).toMatch(/preinstall scriptlet[\s\S]*useradd --system --gid mesh-host/);
      }
    },
  );

  it.skipIf(!canBuildPackages || !canVerifyUnits)(
    'the x64 .deb holds an executable that starts and prints its version, and a unit systemd-analyze verifies',
    async () => {
      const unpacked = mkdtempSync(join(tmpdir(), 'mesh-deb-'));
      try {
        await exec('dpkg-deb', ['-x', join(out, packageNames[0]), unpacked]);
        const executable = join(unpacked, 'usr/bin/mesh-host');
        const printed = await exec(executable, ['--version'], { env: {}, cwd: '/' });
        expect(printed.stdout).toMatch(
          new RegExp(`^mesh-host ${version.replaceAll('.', '\\.')} \\(build [0-9a-f]{12}(-dirty)?\\)\n$`),
        );
        // The supervisor the unit runs names the key built in, then runs the agent it was given.
        const state = mkdtempSync(join(tmpdir(), 'mesh-supervise-'));
        const supervised = await exec(executable, ['supervise', '--dir', state, '--', '--version'], {
          env: {},
          cwd: '/',
        });
        rmSync(state, { recursive: true, force: true });
        expect(supervised.stderr).toContain(
          `trusting release keys ${releaseKeyFingerprint(developmentReleaseKey.publicKey)}`,
        );
        expect(supervised.stdout).toMatch(/^mesh-host \S+ \(build /);
        const unit = readFileSync(join(unpacked, 'lib/systemd/system/mesh-host.service'), 'utf8');
        expect(unit).toBe(await renderHostUnit('/usr/bin/mesh-host'));
        // verify wants ExecStart to exist: the unit as packed, naming the executable as unpacked.
        const verified = await verifyHostUnit(executable);
        expect(verified, JSON.stringify(verified)).toMatchObject({ outcome: 'passed' });
      } finally {
        rmSync(unpacked, { recursive: true, force: true });
      }
    },
  );
});
