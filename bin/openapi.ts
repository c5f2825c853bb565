#!/usr/bin/env node
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openApiDocument, openApiText } from '../lib/server/functions/openapi.ts';
import { routes } from '../lib/server/functions/table.ts';

/**
 * `npm run openapi`: writes docs/openapi.json from the route table. test/unit/openapi.test.ts
 * fails when the checked-in file is not what this writes, and `npm run lint` lints it.
 */
const packageFile = fileURLToPath(new URL('../package.json', import.meta.url));
const target = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));
const { version } = JSON.parse(readFileSync(packageFile, 'utf8')) as { version: string };
writeFileSync(target, openApiText(openApiDocument(routes, version)));
console.log(`wrote docs/openapi.json: ${routes.length} routes`);
