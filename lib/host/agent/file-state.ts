import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentState, AgentStateStore } from './ports.ts';

const stateFile = 'agent-state.json';
const declarationFile = 'declaration.json';

/** The agent's memory in DIR: written to a temporary file, then renamed, so a crash never leaves half a file. */
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

  private async atomically(name: string, content: string): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, name);
    const temporary = `${path}.tmp-${process.pid}`;
    await writeFile(temporary, content, { mode: 0o600 });
    await rename(temporary, path);
    return path;
  }
}
