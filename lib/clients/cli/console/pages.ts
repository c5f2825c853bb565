import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { getAsset, isSea } from 'node:sea';

/**
 * The console's files, served by Mesh itself (the local runtime, and `mesh console` for a
 * deployed stack) from this folder as they are: no build step, nothing from another origin.
 * A page is looked up by its exact path, the same way the API's routes are a table.
 */
export type StaticPage = { readonly path: string; readonly contentType: string; readonly body: Buffer };

export type ConsoleSettings = {
  /** How often the page reads the mesh again while it is visible. */
  readonly refreshSeconds: number;
  /** What the page says it shows: the local control plane, or the stack's URL. */
  readonly source: string;
};

const javascript = 'text/javascript; charset=utf-8';

/** The folder of the console's files, and the key prefix they have in the single executable `mesh`. */
export const consoleAssetsDir = join(import.meta.dirname, 'assets');
export const consoleAssetKey = (file: string) => `console/${file}`;

/** A console file: from the folder, or, in the single executable, from the assets built into it. */
const readAsset = (file: string): Buffer =>
  isSea() ? Buffer.from(getAsset(consoleAssetKey(file))) : readFileSync(join(consoleAssetsDir, file));

export const consoleFiles: ReadonlyArray<{
  readonly path: string;
  readonly file: string;
  readonly contentType: string;
}> = [
  { path: '/console', file: 'index.html', contentType: 'text/html; charset=utf-8' },
  { path: '/console/console.css', file: 'console.css', contentType: 'text/css; charset=utf-8' },
  { path: '/console/icon.svg', file: 'icon.svg', contentType: 'image/svg+xml' },
  ...[
    'app.js',
    'dom.js',
    'fleet.js',
    'fleet-view.js',
    'graph-view.js',
    'layout.js',
    'neighbourhood.js',
    'panels.js',
    'rollouts.js',
  ].map((file) => ({
    path: `/console/${file}`,
    file,
    contentType: javascript,
  })),
];

/** Every page of the console, read once. */
export function consolePages(settings: ConsoleSettings): StaticPage[] {
  return [
    ...consoleFiles.map((entry) => ({
      path: entry.path,
      contentType: entry.contentType,
      body: readAsset(entry.file),
    })),
    {
      path: '/console/settings.json',
      contentType: 'application/json',
      body: Buffer.from(JSON.stringify(settings)),
    },
  ];
}

/**
 * The page's own scripts and styles only, its reads to its own origin only, never framed:
 * what it shows (names, reasons, message bodies) cannot run or load anything.
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export type PageAnswer = {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer | string;
};

/** The answer to a request for a page: GET and HEAD only. */
export function answerPage(page: StaticPage, method: string): PageAnswer {
  if (method !== 'GET' && method !== 'HEAD') {
    return {
      status: 405,
      headers: { 'content-type': 'application/json', allow: 'GET, HEAD' },
      body: JSON.stringify({
        error: { code: 'method_not_allowed', message: `${method} is not allowed on ${page.path}` },
      }),
    };
  }
  return {
    status: 200,
    headers: {
      'content-type': page.contentType,
      'content-length': String(page.body.length),
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'content-security-policy': contentSecurityPolicy,
    },
    body: method === 'HEAD' ? '' : page.body,
  };
}

const findPage = (pages: readonly StaticPage[], path: string) =>
  pages.find((page) => page.path === path || `${page.path}/` === path);

/** Answers the request when its path is a page's; says whether it did. */
export function servePage(
  pages: readonly StaticPage[],
  request: { readonly method: string; readonly path: string },
  response: ServerResponse,
): boolean {
  const page = findPage(pages, request.path);
  if (!page) return false;
  const answer = answerPage(page, request.method);
  response.writeHead(answer.status, answer.headers);
  response.end(answer.body);
  return true;
}
