import { describe, expect, it } from 'vitest';
import {
  BadMeshFileError,
  checkMeshFile,
  type MeshFileProblem,
  readMeshFile,
} from '../../../lib/server/core/mesh-file/index.ts';
import { expandPattern } from '../../../lib/server/core/mesh-file/ranges.ts';

/** The file in issue 21, as written there. */
const issueExample = `version: 1
nodes:
  broker-1:
    labels: {role: broker}
    modules:
      rabbit: {provides: amqp}
  web-1:
    labels: {role: web}
    modules:
      nginx:
        consumes: [broker-1/rabbit]
groups:
  web:                         # expands to web-001 … web-800, each with these labels and modules
    nodes: web-[001-800]
    labels: {role: web}
    modules:
      nginx: {consumes: [broker-1/rabbit]}
tests:                         # checked at plan time; a failing test stops the apply
  - {consumer: "web-*/nginx", reaches: broker-1/rabbit}
  - {label: {role: web}, mustNotConsume: "db-*/*"}
`;

const brief = (problems: readonly MeshFileProblem[]) =>
  problems.map((p) => `${p.line}:${p.column} ${p.code} ${p.path}`);

describe('reading a mesh file', () => {
  it('expands the issue’s example: 802 nodes, each web node consuming broker-1/rabbit', () => {
    const read = readMeshFile(issueExample);
    expect(read.format).toBe('yaml');
    expect(read.mesh.nodes).toHaveLength(802);
    expect(read.mesh.nodes[0]).toEqual({
      node: 'broker-1',
      labels: { role: 'broker' },
      assignments: [{ module: 'rabbit', provides: 'amqp' }],
      relations: [],
    });
    expect(read.mesh.nodes.find((n) => n.node === 'web-042')).toEqual({
      node: 'web-042',
      labels: { role: 'web' },
      assignments: [{ module: 'nginx', provides: null }],
      relations: [
        { consumerModule: 'nginx', providerNode: 'broker-1', providerModule: 'rabbit', kind: 'amqp' },
      ],
    });
    expect(read.mesh.nodes.map((n) => n.node).slice(0, 4)).toEqual([
      'broker-1',
      'web-001',
      'web-002',
      'web-003',
    ]);
    expect(read.mesh.origins.get('web-800')).toEqual(['groups', 'web']);
  });

  it('refuses the example under a lower limit, naming the limit: 801 consumers on broker-1', () => {
    const limits = { consumersPerNode: 300 };
    const checked = checkMeshFile(issueExample, { limits });
    expect(checked.problems).toEqual([
      {
        line: 3,
        column: 3,
        path: 'nodes.broker-1',
        code: 'limit-exceeded',
        message: 'node broker-1 would have 801 consumers, over its limit of 300 (consumersPerNode)',
      },
    ]);
    expect(() => readMeshFile(issueExample, { limits })).toThrow(BadMeshFileError);
  });

  it('reads JSON as the same file', () => {
    const json = JSON.stringify({
      version: 1,
      nodes: { 'broker-1': { modules: { rabbit: { provides: 'amqp' } } } },
      groups: {
        web: { nodes: ['web-[1-3]', 'web-9'], modules: { nginx: { consumes: ['broker-1/rabbit'] } } },
      },
    });
    const read = readMeshFile(json);
    expect(read.format).toBe('json');
    expect(read.mesh.nodes.map((n) => n.node)).toEqual(['broker-1', 'web-1', 'web-2', 'web-3', 'web-9']);
  });

  it('reports every problem at once, each at its line and column', () => {
    const text = `version: 1
nodes:
  Broker-1:
    lables: {role: broker}
    modules:
      rabbit: {provides: AMQP}
  broker-2:
    modules:
      rabbit: {provides: amqp}
      pg: {provides: postgres}
      plain: {}
  web-001:
    labels: {role: 1}
groups:
  web:
    nodes: ["web-[001-003]", "web-[9-7]", "x-[1-200000]"]
    labels: {role: web}
    modules:
      nginx: {consumes: [broker-3/rabbit, broker-2/nope, broker-2/plain, broker-2/rabbit, broker-2/rabbit]}
      pg: {provides: http, consumes: [web-002/pg]}
tests:
  - {consumer: "web-*/nginx", reaches: broker-2/rabbit}
  - {label: {role: web}, mustNotConsume: "broker-*/rabbit"}
  - {label: {role: nobody}, mustNotConsume: "db-*/*"}
  - {label: {role: web}}
  - {consumer: "web-*/nginx", reaches: x, typo: 1}
`;
    const { problems } = checkMeshFile(text, { limits: { consumersPerNode: 2 } });
    expect(brief(problems)).toEqual([
      '3:3 bad-name nodes.Broker-1',
      '4:5 unknown-field nodes.Broker-1.lables',
      '6:26 bad-kind nodes.Broker-1.modules.rabbit.provides',
      '7:3 limit-exceeded nodes.broker-2',
      '13:20 bad-label nodes.web-001.labels.role',
      '16:13 duplicate-node groups.web.nodes[0]',
      '16:30 bad-range groups.web.nodes[1]',
      '16:43 too-many-nodes groups.web.nodes[2]',
      '19:26 unknown-provider groups.web.modules.nginx.consumes[0]',
      '19:43 unknown-provider groups.web.modules.nginx.consumes[1]',
      '19:58 not-a-provider groups.web.modules.nginx.consumes[2]',
      '19:91 duplicate-relation groups.web.modules.nginx.consumes[4]',
      '20:22 provider-kind-conflict groups.web.modules.pg.provides',
      '20:39 self-consumption groups.web.modules.pg.consumes[0]',
      '23:5 test-failed tests[1]',
      '24:5 test-failed tests[2]',
      '25:5 bad-test tests[3]',
      '26:40 bad-test tests[4].reaches',
      '26:43 unknown-field tests[4].typo',
    ]);
    const byCode = (code: string) => problems.find((p) => p.code === code)?.message;
    expect(byCode('duplicate-node')).toBe(
      'node web-001 is defined twice: in nodes.web-001 and in groups.web',
    );
    expect(byCode('not-a-provider')).toBe(
      'broker-2/plain: module plain on node broker-2 is not a provider (give it provides: KIND)',
    );
    expect(byCode('self-consumption')).toBe('web-002/pg cannot consume itself');
    expect(byCode('limit-exceeded')).toBe(
      'node broker-2 would have 3 consumers, over its limit of 2 (consumersPerNode)',
    );
    expect(byCode('test-failed')).toBe(
      'test failed: nodes labelled role=web must not consume broker-*/rabbit: not so for web-002, web-003',
    );
    expect(byCode('bad-label')).toBe('a label value is a string: quote numbers and booleans ("1")');
    expect(byCode('unknown-field')).toBe('unknown field "lables" (here: labels, modules)');
  });

  it('says which consumers break a test, ten by name and the rest counted', () => {
    const text = `version: 1
nodes:
  broker-1: {modules: {rabbit: {provides: amqp}}}
groups:
  web: {nodes: "web-[01-25]", modules: {nginx: {}}}
tests:
  - {consumer: "web-*/nginx", reaches: broker-1/rabbit}
`;
    const [problem] = checkMeshFile(text).problems;
    expect(problem?.message).toBe(
      'test failed: web-*/nginx reaches broker-1/rabbit: not so for web-01/nginx, web-02/nginx, web-03/nginx, web-04/nginx, web-05/nginx, web-06/nginx, web-07/nginx, web-08/nginx, web-09/nginx, web-10/nginx and 15 more',
    );
  });

  it('reports a syntax error where it is, and goes no further', () => {
    expect(brief(checkMeshFile('version: 1\nnodes: [\n  a: 1\n').problems)).toEqual(['4:1 syntax ']);
  });

  it('reports a key given twice, a node or any other, in YAML and JSON', () => {
    const yaml = 'version: 1\nnodes:\n  a: {labels: {k: v, k: w}}\n  a: {}\n';
    expect(brief(checkMeshFile(yaml).problems)).toEqual([
      '3:22 duplicate-key nodes.a.labels.k',
      '4:3 duplicate-node nodes.a',
    ]);
    const json = '{"version": 1, "nodes": {"a": {}, "a": {}}, "version": 1}';
    expect(brief(checkMeshFile(json).problems)).toEqual([
      '1:35 duplicate-node nodes.a',
      '1:45 duplicate-key version',
    ]);
  });

  it('reports the node bound once, and still checks the patterns after it', () => {
    const text = `version: 1
groups:
  a: {nodes: "a-[1-6]"}
  b: {nodes: ["b-[1-6]", "c-[1-6]", "d-[2-1]"]}
`;
    expect(brief(checkMeshFile(text, { maxNodes: 10 }).problems)).toEqual([
      '4:15 too-many-nodes groups.b.nodes[0]',
      '4:37 bad-range groups.b.nodes[2]',
    ]);
  });

  it('lists the first thousand problems in file order and counts the rest', () => {
    const text = `version: 1\nnodes:\n${Array.from({ length: 1500 }, (_, i) => `  Bad-${i}: {}`).join('\n')}\n`;
    const checked = checkMeshFile(text);
    expect(checked.problems).toHaveLength(1000);
    expect(checked.omitted).toBe(500);
    expect(checked.problems[0]?.line).toBe(3);
    expect(() => readMeshFile(text)).toThrow(/the mesh file has 1500 problems:[\s\S]*… and 500 more$/);
  });

  it('refuses a file larger than the bound before parsing it', () => {
    const { problems } = checkMeshFile(`version: 1\n${'#'.repeat(100)}\n`, { maxBytes: 50 });
    expect(problems[0]?.code).toBe('too-large');
  });

  it('refuses a file nested 10,000 deep in one clear problem, in every way of writing it (issue 36, finding 6)', () => {
    const deep = {
      flow: `version: 1\nnodes: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`,
      sequences: `version: 1\nnodes: ${'\n'}${'- '.repeat(10_000)}x\n`,
      maps: `version: 1\nnodes: ${'{a: '.repeat(10_000)}1${'}'.repeat(10_000)}\n`,
      indented: `version: 1\nnodes:\n${Array.from({ length: 2_000 }, (_, i) => `${' '.repeat(i + 2)}a:`).join('\n')} 1\n`,
    };
    for (const [how, text] of Object.entries(deep)) {
      const { problems } = checkMeshFile(text);
      expect({ how, codes: problems.map((p) => p.code) }).toEqual({ how, codes: ['too-deep'] });
      expect(problems[0]?.message).toMatch(/^the file nests deeper than the 32 levels a mesh file may/);
      expect(problems[0]?.message).not.toContain('call stack');
    }
    // as deep as the format itself goes, and deeper in a way the format refuses: read as before
    const fine = `version: 1\nnodes:\n  web-1:\n    modules:\n      nginx:\n        consumes: [broker-1/rabbit]\n  broker-1: {modules: {rabbit: {provides: amqp}}}\n`;
    expect(checkMeshFile(fine).problems).toEqual([]);
    const thirty = `version: 1\nnodes: {web-1: {labels: ${'['.repeat(25)}${']'.repeat(25)}}}\n`;
    expect(checkMeshFile(thirty).problems.map((p) => p.code)).not.toContain('too-deep');
  });

  it('refuses a file whose aliases multiply', () => {
    const text = `version: 1\nnodes:\n  a: &a {labels: {k: v}}\n${Array.from({ length: 150 }, (_, i) => `  n${i}: *a`).join('\n')}\n`;
    expect(checkMeshFile(text).problems[0]?.code).toBe('syntax');
  });

  it('takes the live mesh’s kinds for modules the file does not give one', () => {
    const text = `version: 1
nodes:
  broker-1: {modules: {rabbit: {}}}
  web-1: {modules: {nginx: {consumes: [broker-1/rabbit]}}}
`;
    expect(checkMeshFile(text).problems.map((p) => p.code)).toEqual(['not-a-provider']);
    const read = readMeshFile(text, { kinds: new Map([['rabbit', 'amqp']]) });
    expect(read.mesh.nodes[0]?.assignments).toEqual([{ module: 'rabbit', provides: 'amqp' }]);
  });
});

describe('node patterns', () => {
  it('expands ranges, zero-padded as their start is, and their combinations', () => {
    expect(expandPattern('web-[001-003]', 10)).toEqual({ names: ['web-001', 'web-002', 'web-003'] });
    expect(expandPattern('web-[9-11]', 10)).toEqual({ names: ['web-9', 'web-10', 'web-11'] });
    expect(expandPattern('r[1-2]-n[01-02]', 10)).toEqual({ names: ['r1-n01', 'r1-n02', 'r2-n01', 'r2-n02'] });
    expect(expandPattern('web-7', 10)).toEqual({ names: ['web-7'] });
  });

  it.each([
    ['web-[001-1000]', 'same number of digits'],
    ['web-[3-1]', 'ends before it starts'],
    ['web-[a-b]', '[START-END] with digits'],
    ['web-[1-2', 'unmatched'],
    ['[1-2]-web', 'not a DNS label'],
    ['web-[1-20]', 'more than 10'],
  ])('refuses %s', (pattern, why) => {
    const expanded = expandPattern(pattern, 10);
    expect('error' in expanded && expanded.error).toContain(why);
  });

  it('counts a pattern before making its names', () => {
    const started = performance.now();
    expect(expandPattern('n[1-999999999]-[1-999999999]', 100_000)).toMatchObject({ count: 999999999 ** 2 });
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('a file with nothing to read', () => {
  it('says the file is empty (or not a map) in words, not the schema’s', () => {
    for (const [text, what] of [
      ['', 'the file is empty'],
      ['  \n# only a comment\n', 'the file is empty'],
      ['[]', 'the file is a list'],
      ['42', 'the file is a number'],
    ] as const) {
      const { problems } = checkMeshFile(text);
      expect(problems, JSON.stringify(text)).toEqual([
        expect.objectContaining({
          line: 1,
          column: 1,
          code: 'invalid',
          message: expect.stringContaining(`${what}: a mesh file is a map`),
        }),
      ]);
      expect(problems[0]?.message).not.toContain('expected object');
    }
  });
});
