import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { elfMachines, hasInjectedApplication, readElfHeader } from '../../tools/packaging/elf.ts';
import type { PackageResult } from '../../tools/packaging/package.ts';
import { installedExecutable, renderHostUnit } from '../../tools/packaging/systemd-unit.ts';

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

let out: string;
let result: PackageResult;

/** `npm run package` as an operator runs it, into a folder of its own. */
beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'mesh-package-'));
  // Exit 1 when systemd-analyze refuses the unit: the JSON still says what was built, and the
  // verify test below shows what systemd-analyze said.
  const { stdout, stderr } = await exec(process.execPath, ['bin/package.ts', '--out', out, '--json'], {
    cwd: root,
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
});

describe('npm run package', () => {
  it('writes four executables, a checksum beside each that sha256sum accepts, and the unit', async () => {
    expect(readdirSync(out).sort()).toEqual(
      [...artifacts, ...artifacts.map((name) => `${name}.sha256`), 'mesh-host.service'].sort(),
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

  it('the unit runs mesh-host run from /usr/local/bin, keeps state owner-only and does not restart on exit 2 or 9', async () => {
    const unit = readFileSync(join(out, 'mesh-host.service'), 'utf8');
    expect(unit).toBe(await renderHostUnit());
    expect(unit).toContain(
      `ExecStart=${installedExecutable} run --dir /var/lib/mesh-host --apply /etc/mesh-host/apply`,
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
});
