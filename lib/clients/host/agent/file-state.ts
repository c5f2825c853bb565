import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentState, AgentStateStore, GoodDeclaration } from './ports.ts';

const stateFile = 'agent-state.json';
const declarationFile = 'declaration.json';
/** The last good declaration with its revision and ETag, in one file so it is never half of one and half of another. */
const goodFile = 'last-good.json';

/**
 * The agent's memory in DIR: `agent-state.json`, the declaration handed to the apply command
 * (`declaration.json`) and the last good one (`last-good.json`), each mode 0600, written to a
 * temporary file, then renamed, so a crash never leaves half a file.
 */
export class FileAgentState implements AgentStateStore {
  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  async load(): Promise<AgentState> {
    try {
      const parsed = JSON.parse(await readFile(join(this.dir, stateFile), 'utf8')) as Partial<AgentState>;
      return {
        lastSequence: typeof parsed.lastSequence === 'number' ? parsed.lastSequence : 0,
        ...(typeof parsed.appliedEtag === 'string' ? { appliedEtag: parsed.appliedEtag } : {}),
        ...(typeof parsed.appliedRevision === 'number' ? { appliedRevision: parsed.appliedRevision } : {}),
        ...(typeof parsed.revertedEtag === 'string' ? { revertedEtag: parsed.revertedEtag } : {}),
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || error instanceof SyntaxError)
        return { lastSequence: 0 };
      throw error;
    }
  }

  async save(state: AgentState): Promise<void> {
    await this.atomically(stateFile, `${JSON.stringify(state)}\n`);
  }

  async writeDeclaration(body: string): Promise<string> {
    return this.atomically(declarationFile, body);
  }

  async readDeclaration(): Promise<{ readonly path: string; readonly body: string | undefined }> {
    const path = join(this.dir, declarationFile);
    try {
      return { path, body: await readFile(path, 'utf8') };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { path, body: undefined };
      throw error;
    }
  }

  async keepGood(good: GoodDeclaration): Promise<void> {
    await this.atomically(goodFile, `${JSON.stringify(good)}\n`);
  }

  async lastGood(): Promise<GoodDeclaration | undefined> {
    try {
      const kept = JSON.parse(await readFile(join(this.dir, goodFile), 'utf8')) as Partial<GoodDeclaration>;
      if (typeof kept.revision !== 'number' || typeof kept.etag !== 'string' || typeof kept.body !== 'string')
        return undefined;
      return { revision: kept.revision, etag: kept.etag, body: kept.body };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || error instanceof SyntaxError)
        return undefined;
      throw error;
    }
  }

  private async atomically(name: string, content: string): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, name);
    const temporary = `${path}.tmp-${process.pid}`;
    await writeFile(temporary, content, { mode: 0o600 });
    await rename(temporary, path);
    return path;
  }
}
