import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { meshFileJsonSchema, problemCodes } from '../../../lib/server/core/mesh-file/index.ts';

const docs = join(import.meta.dirname, '../../../docs');

describe('the mesh file’s documents', () => {
  it('docs/mesh-file.schema.json is the schema the code reads files with', () => {
    // Written by: node -e "import('./lib/server/core/mesh-file/schema.ts').then((m) => console.log(JSON.stringify(m.meshFileJsonSchema())))" > docs/mesh-file.schema.json, then npx biome format --write docs/mesh-file.schema.json
    const written = JSON.parse(readFileSync(join(docs, 'mesh-file.schema.json'), 'utf8'));
    expect(written).toEqual(meshFileJsonSchema());
  });

  it('the JSON Schema names every field of the file and refuses others', () => {
    const schema = meshFileJsonSchema() as {
      properties: Record<string, { additionalProperties?: { properties?: object } }>;
      additionalProperties: boolean;
    };
    expect(Object.keys(schema.properties)).toEqual(['version', 'modules', 'nodes', 'groups', 'tests']);
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties.groups?.additionalProperties?.properties ?? {})).toEqual([
      'nodes',
      'labels',
      'modules',
    ]);
  });

  it('docs/mesh-file.md explains every problem code', () => {
    const text = readFileSync(join(docs, 'mesh-file.md'), 'utf8');
    expect(problemCodes.filter((code) => !text.includes(`\`${code}\``))).toEqual([]);
  });
});
