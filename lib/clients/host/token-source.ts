import { readFile, stat } from 'node:fs/promises';
import { tokenString } from '../../server/core/enrolment/token.ts';

/**
 * Where `mesh-host enrol` takes the one-time token from. A command line is visible to every
 * user of the machine (`ps`, /proc/PID/cmdline), so the token comes from the environment
 * (MESH_TOKEN) or from a file; `--token` still works, with a warning.
 */
export type TokenSources = {
  /** The value of `--token` or MESH_TOKEN, whichever commander found. */
  readonly token?: string | undefined;
  /** Where commander found it: 'cli' for `--token`, 'env' for MESH_TOKEN. */
  readonly tokenFrom?: string | undefined;
  readonly tokenFile?: string | undefined;
};

export type ChosenToken =
  | { readonly ok: true; readonly token: string; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly problem: string };

/** A token is 70 characters; a file much larger than that is not a token file. */
const tokenFileMaxBytes = 4096;

export async function chooseToken(sources: TokenSources): Promise<ChosenToken> {
  const fromValue = sources.token !== undefined && sources.token !== '';
  if (fromValue && sources.tokenFile !== undefined) {
    const value = sources.tokenFrom === 'env' ? 'MESH_TOKEN is set' : '--token is given';
    return { ok: false, problem: `${value} and so is --token-file: give the token one way only` };
  }
  if (sources.tokenFile !== undefined) return readTokenFile(sources.tokenFile);
  if (!fromValue) {
    return { ok: false, problem: 'no token: set MESH_TOKEN or pass --token-file FILE' };
  }
  const warnings =
    sources.tokenFrom === 'cli'
      ? [
          'warning: --token puts the token in the process list, where every user of this machine can read it; set MESH_TOKEN or use --token-file',
        ]
      : [];
  return { ok: true, token: sources.token as string, warnings };
}

async function readTokenFile(path: string): Promise<ChosenToken> {
  let text: string;
  let mode: number;
  try {
    const found = await stat(path);
    if (found.size > tokenFileMaxBytes) {
      return { ok: false, problem: `--token-file ${path} is ${found.size} bytes: not a token file` };
    }
    mode = found.mode & 0o777;
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return { ok: false, problem: `--token-file ${path} cannot be read (${code})` };
  }
  const warnings =
    (mode & 0o077) !== 0
      ? [`warning: ${path} can be read by other users (mode ${mode.toString(8)}); keep token files 0600`]
      : [];
  const token = tokenString.safeParse(text.trim());
  if (!token.success) {
    // Never echo the file: whatever it holds may be a secret.
    return { ok: false, problem: `--token-file ${path} holds no token (${token.error.issues[0]?.message})` };
  }
  return { ok: true, token: token.data, warnings };
}
