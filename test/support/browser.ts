import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/**
 * Debian's Chromium, driven by playwright-core (browser downloads are not reachable here):
 * `apt-get install chromium`, which .ci/run does when it is missing. Each browser gets a fresh
 * profile, removed when it closes, and nothing that would reach out on its own.
 */
export const chromiumPath = '/usr/bin/chromium';
const quiet = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export type OpenBrowser = { readonly context: BrowserContext; close(): Promise<void> };

export async function openBrowser(viewport = { width: 1400, height: 860 }): Promise<OpenBrowser> {
  if (!existsSync(chromiumPath))
    throw new Error(`no Chromium at ${chromiumPath}: apt-get install chromium (.ci/run installs it)`);
  const profile = mkdtempSync(join(tmpdir(), 'mesh-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: quiet,
    viewport,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
