import { open, readFile } from 'node:fs/promises';

/** The ELF machines Mesh ships for, by their `e_machine` number. */
export const elfMachines = { x64: 62, arm64: 183 } as const;
const machineNames: Record<number, string> = { 62: 'x86-64', 183: 'aarch64' };

/** What the first bytes of an executable say about it. */
export type ElfHeader = {
  readonly bits: 32 | 64;
  readonly littleEndian: boolean;
  readonly machine: number;
  readonly machineName: string;
};

/** A file that is not an executable for the machine it was meant for. */
export class WrongExecutableFormatError extends Error {
  override name = 'WrongExecutableFormatError';
}

export async function readElfHeader(path: string): Promise<ElfHeader> {
  const file = await open(path, 'r');
  const bytes = Buffer.alloc(20);
  try {
    await file.read(bytes, 0, bytes.length, 0);
  } finally {
    await file.close();
  }
  if (bytes.readUInt32BE(0) !== 0x7f454c46)
    throw new WrongExecutableFormatError(`${path} is not an ELF file`);
  const littleEndian = bytes[5] === 1;
  const machine = littleEndian ? bytes.readUInt16LE(18) : bytes.readUInt16BE(18);
  return {
    bits: bytes[4] === 2 ? 64 : 32,
    littleEndian,
    machine,
    machineName: machineNames[machine] ?? `machine ${machine}`,
  };
}

/** Throws unless PATH is a 64-bit little-endian ELF executable for `machine`. */
export async function assertElfFor(path: string, machine: number): Promise<ElfHeader> {
  const header = await readElfHeader(path);
  const wanted = machineNames[machine] ?? `machine ${machine}`;
  if (header.bits !== 64 || !header.littleEndian || header.machine !== machine) {
    throw new WrongExecutableFormatError(
      `${path} is a ${header.bits}-bit ${header.littleEndian ? 'little' : 'big'}-endian ELF for ${header.machineName}, not a 64-bit little-endian ELF for ${wanted}`,
    );
  }
  return header;
}

/**
 * Node's single executable fuse: a string in every Node binary that ends in `:0`, flipped to
 * `:1` when an application blob is injected. Node reads the blob only when it is flipped.
 */
export const seaFuse = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Whether the binary at PATH carries an injected application (its fuse is flipped). */
export async function hasInjectedApplication(path: string): Promise<boolean> {
  const contents = await readFile(path);
  if (contents.includes(`${seaFuse}:1`)) return true;
  if (contents.includes(`${seaFuse}:0`)) return false;
  throw new WrongExecutableFormatError(`${path} is not a Node binary: it has no single executable fuse`);
}
