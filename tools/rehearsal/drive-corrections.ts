import { type DriveClients, DriveFailure, expectStatus } from './drive-clients.ts';

/**
 * The drive's steps for the operator's corrections (mesh-drive.ts runs them in its `paths`):
 * each needs the mesh the steps before it built, with app enrolled, reported and carrying web
 * 2.0.0 from a build announced by catch-up.
 */

/** A report ahead of the clock is refused at the edge; app's report is reset, and its next one recorded. */
export async function refuseAndResetAReport(mesh: DriveClients): Promise<void> {
  const ahead = { sequence: 9e15, state: 'applied', revision: 1, sentAt: new Date().toISOString() };
  expectStatus(await mesh.host('app').send('POST', '/hosts/app/reports', ahead), 422, 'a report ahead');
  const path = '/nodes/app/report';
  const { reset } = expectStatus(await mesh.operator.send('DELETE', path), 200, `DELETE ${path}`).body as {
    reset: unknown;
  };
  if (!reset) throw new DriveFailure('the reset did not name the report it forgot');
  if ((await mesh.appliedRevision('app')) !== undefined)
    throw new DriveFailure('app still shows an applied revision after its report was reset');
  const { revision } = await mesh.declarationOf('app');
  await mesh.reportApplied('app', revision);
  await mesh.waitFor('app’s report after the reset to be recorded', async () =>
    (await mesh.appliedRevision('app')) === revision ? true : undefined,
  );
}

/** web 2.1.0 built and announced, then retracted: the next catch-up takes app back to 2.0.0. */
export async function retractABuild(mesh: DriveClients): Promise<void> {
  const { operator } = mesh;
  // A catch-up taken before the build is recorded announces the one before: asked again until it lands.
  const announced = (version: string) => {
    let askAt = 0;
    return mesh.waitFor(`web ${version} in app’s declaration`, async () => {
      if ((await mesh.versionOf('app', 'web')) === version) return true;
      if (Date.now() >= askAt) {
        expectStatus(await operator.send('POST', '/catch-up', {}), 202, 'POST /catch-up');
        askAt = Date.now() + 3_000;
      }
      return undefined;
    });
  };
  const bad = { module: 'web', version: '2.1.0' };
  expectStatus(await operator.send('POST', '/builds', bad), 202, 'POST /builds web 2.1.0');
  await announced('2.1.0');
  const retracted = expectStatus(
    await operator.send('POST', '/builds/retractions', bad),
    200,
    'POST /builds/retractions',
  ).body as { latest: { version: string } | null };
  if (retracted.latest?.version !== '2.0.0')
    throw new DriveFailure(`the latest after the retraction is not 2.0.0: ${JSON.stringify(retracted)}`);
  await announced('2.0.0');
}
