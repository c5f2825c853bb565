import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliLines } from '../../lib/clients/cli/output-lines.ts';
import { agentLines, commandLines } from '../../lib/clients/host/log-lines.ts';
import { runtimeLines } from '../../lib/local/log-lines.ts';
import { edgeLines } from '../../lib/server/api/log-lines.ts';
import {
  type CodedLine,
  jsonLine,
  lineFormatOf,
  printedLine,
  say,
} from '../../lib/server/core/coded-lines.ts';
import { consumerLines } from '../../lib/server/core/control/log-lines.ts';
import { eventLines } from '../../lib/server/core/events/log-lines.ts';
import { pushLines } from '../../lib/server/core/mesh/log-lines.ts';
import { signalLines } from '../../lib/server/core/signal/log-lines.ts';
import { summaryLines } from '../../lib/server/core/summary/log-lines.ts';
import { codedLineReader, codedLinesIn, printedJson } from '../support/processes.ts';

const catalogues = {
  runtimeLines,
  consumerLines,
  signalLines,
  summaryLines,
  agentLines,
  commandLines,
  cliLines,
  edgeLines,
  pushLines,
  eventLines,
};
const every: Array<CodedLine<never>> = Object.values(catalogues).flatMap(
  (catalogue) => Object.values(catalogue) as Array<CodedLine<never>>,
);

/** Each table row of docs/codes.md: its code and level. */
const documented = readFileSync(join(import.meta.dirname, '../../docs/codes.md'), 'utf8')
  .split('\n')
  .map((row) => /^\| `([a-z.-]+)` \| (info|warn|error) \|/.exec(row))
  .filter((match) => match !== null)
  .map(([, code, level]) => ({ code, level }));

describe('coded lines: what a program reads of Mesh’s output', () => {
  it('every code is unique, of our vocabulary, and documented with its level in docs/codes.md', () => {
    const codes = every.map((line) => line.code);
    expect(codes.filter((code, index) => codes.indexOf(code) !== index)).toEqual([]);
    expect(codes.filter((code) => !/^[a-z]+(-[a-z]+)*(\.[a-z]+(-[a-z]+)*)+$/.test(code))).toEqual([]);
    expect(documented.map((row) => `${row.code} ${row.level}`).sort()).toEqual(
      every.map((line) => `${line.code} ${line.level}`).sort(),
    );
  });

  it('says for people what it always said, and for programs the code, the level, the text and the fields', () => {
    const ready = say(runtimeLines.ready, { url: 'http://127.0.0.1:4600', seconds: 2.7 });
    expect(printedLine(ready, 'text', 'mesh: ')).toBe(
      'mesh: control plane ready in 2.7 s at http://127.0.0.1:4600\n',
    );
    expect(JSON.parse(jsonLine(ready))).toEqual({
      code: 'runtime.ready',
      level: 'info',
      message: 'control plane ready in 2.7 s at http://127.0.0.1:4600',
      url: 'http://127.0.0.1:4600',
      seconds: 2.7,
    });
    expect(say(agentLines.retrying, { seconds: 4.213, reason: 'away' }).message).toBe(
      'waiting 4.2 s before trying again: away',
    );
    expect(
      say(cliLines.progress, { push: 'p', round: 1, checked: 4000, pending: 10000, flushed: 3950 }).message,
    ).toBe('push p: round 1 [########------------] 4,000 of 10,000 looked at, 3,950 flushed');
    expect(
      say(consumerLines.held, { type: 'report', subject: 'report:a', seconds: 5, reason: 'x' }).message,
    ).toBe('held report report:a for 5 s: x');
  });

  it('reads the JSON lines back from a process’s output, a line split across writes included', () => {
    const applied = jsonLine(say(agentLines.applied, { revision: 3 }));
    const output = `mesh-host a: prose\n${applied}\n{"level":"INFO","message":"no code"}\n`;
    const heard = { code: 'host.applied', level: 'info', message: 'applied revision 3', revision: 3 };
    expect(codedLinesIn(output)).toEqual([heard]);
    const split: unknown[] = [];
    const read = codedLineReader((said) => split.push(said));
    read(output.slice(0, 30));
    read(output.slice(30));
    expect(split).toEqual([heard]);
  });

  it('finds the --json result among the coded lines on stderr', () => {
    const note = jsonLine(say(cliLines.tokenFileNext, { node: 'a', file: 'a.token' }));
    const result = JSON.stringify({ node: 'a', tokenFile: 'a.token' }, null, 2);
    expect(printedJson(`${note}\n${result}\n${note}\n`)).toEqual({ node: 'a', tokenFile: 'a.token' });
    expect(printedJson(`${note}\n{}\n`)).toEqual({});
    expect(printedJson(`${note}\n`)).toBeUndefined();
  });

  it('prints JSON only when asked: MESH_LOG_FORMAT=json', () => {
    expect([
      lineFormatOf('json'),
      lineFormatOf('JSON'),
      lineFormatOf(undefined),
      lineFormatOf('text'),
    ]).toEqual(['json', 'json', 'text', 'text']);
  });
});
