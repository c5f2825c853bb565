import { describe, expect, it } from 'vitest';
import { answerPage, consolePages } from '../../lib/clients/cli/console/pages.ts';
import { consoleReadRoutes } from '../../lib/clients/cli/console/routes.ts';
import { auditFunctions } from '../../lib/server/functions/audit.ts';
import { rolloutFunctions } from '../../lib/server/functions/rollouts.ts';
import { summaryFunctions } from '../../lib/server/functions/summary.ts';
import { routesOf } from '../../lib/server/functions/table.ts';
import { viewFunctions } from '../../lib/server/functions/views.ts';

const pages = consolePages({ refreshSeconds: 7, source: 'local control plane' });
const page = (path: string) => {
  const found = pages.find((p) => p.path === path);
  if (!found) throw new Error(`no page ${path}`);
  return found;
};

describe('the console’s pages', () => {
  it('are the page, its styles and its scripts, and the settings it reads', () => {
    expect(pages.map((p) => p.path)).toEqual([
      '/console',
      '/console/console.css',
      '/console/icon.svg',
      '/console/app.js',
      '/console/dom.js',
      '/console/fleet.js',
      '/console/fleet-view.js',
      '/console/graph-view.js',
      '/console/layout.js',
      '/console/neighbourhood.js',
      '/console/panels.js',
      '/console/rollouts.js',
      '/console/settings.json',
    ]);
    expect(JSON.parse(page('/console/settings.json').body.toString())).toEqual({
      refreshSeconds: 7,
      source: 'local control plane',
    });
  });

  it('every script the page imports is served', () => {
    const served = new Set(pages.map((p) => p.path));
    for (const script of pages.filter((p) => p.path.endsWith('.js'))) {
      for (const [, name] of script.body.toString().matchAll(/from '\.\/([\w-]+\.js)'/g))
        expect(served, `${script.path} imports ${name}`).toContain(`/console/${name}`);
    }
  });

  it('are answered with their own origin only allowed to run or load anything, and never framed', () => {
    const answer = answerPage(page('/console'), 'GET');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(answer.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  it('refuse every method but GET and HEAD', () => {
    expect(answerPage(page('/console/app.js'), 'POST')).toMatchObject({
      status: 405,
      headers: { allow: 'GET, HEAD' },
    });
    expect(answerPage(page('/console/app.js'), 'HEAD').body).toBe('');
  });

  it('the routes the console forwards are exactly the GET routes of the seeing, summary, rollout and audit functions', () => {
    const seeing = routesOf([...viewFunctions, ...summaryFunctions, ...rolloutFunctions, ...auditFunctions])
      .filter((route) => route.method === 'GET')
      .map((route) => route.path);
    expect([...consoleReadRoutes].sort()).toEqual(seeing.sort());
  });
});
