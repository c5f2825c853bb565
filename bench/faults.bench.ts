import { FaultRig } from '../tools/fleet/fault-rig.ts';
import {
  type Fault,
  killedMidBatch,
  killedMidPush,
  queueStopped,
  runScenario,
  type ScenarioResult,
  storeStopped,
} from '../tools/fleet/fault-scenarios.ts';
import { BenchProcesses } from './support/bench-processes.ts';
import type { BenchTable } from './support/table.ts';

const faults: readonly Fault[] = [
  storeStopped(5),
  storeStopped(30),
  storeStopped(90),
  storeStopped(150),
  queueStopped(30),
  killedMidPush,
  killedMidBatch,
];

/**
 * The fault matrix: 50 hosts' agents report (heartbeats every 3 s, and applying/applied for each
 * push) while the store is stopped for 5, 30, 90 and 150 s, the queue for 30 s, and the control
 * plane is SIGKILLed mid-push and mid-batch. Every report a host made is accounted for: recorded,
 * superseded by a newer one of its node, let go with a `lost` line, or silent (goal 0). About a
 * quarter of an hour; the bed `faults` runs a short form.
 */
export async function run(): Promise<BenchTable[]> {
  const processes = new BenchProcesses('faults');
  const rig = new FaultRig({ processes, hosts: 50, loadNodes: 250, intervalMs: 3_000, heartbeatMs: 3_000 });
  const results: ScenarioResult[] = [];
  try {
    await rig.start();
    for (const fault of faults) {
      process.stdout.write(`faults: ${fault.name}…\n`);
      // Past the hold bound and a killed batch's visibility timeout (180 s), with room to spare.
      const result = await runScenario(rig, fault, { leadInMs: 6_000, tailMs: 10_000, settleMs: 300_000 });
      results.push(result);
      process.stdout.write(
        `faults: ${fault.name}: ${result.sent} sent, ${result.silent} silent; ${result.notes.join('; ')}\n`,
      );
    }
  } catch (error) {
    process.stdout.write(`${processes.dump()}\n`);
    throw error;
  } finally {
    await rig.stop();
    await processes.stop();
  }
  return [faultTable(results)];
}

export function faultTable(results: readonly ScenarioResult[]): BenchTable {
  return {
    title: 'fault matrix: every report the hosts made, by what became of it',
    columns: [
      'scenario',
      'made',
      'not taken, replaced',
      'not taken, waiting',
      'sent',
      'held',
      'recorded',
      'superseded',
      'lost with line',
      'silent',
      'store disagrees',
      'settled again',
      's',
    ],
    rows: results.map((result) => [
      result.name,
      result.made,
      result.replacedAtHost,
      result.waitingAtStop,
      result.sent,
      result.held,
      result.recorded,
      result.superseded,
      result.lostWithLine,
      result.silent,
      result.storeDisagrees.length,
      result.settledAgain,
      Math.round(result.seconds),
    ]),
    notes: [
      'sent: on the queue (answered 202, or seen by the consumer); held: of those, held at least once; not taken: told try again or not answered, then replaced by a newer report at the host, or still waiting when the hosts stopped',
      'superseded: set aside by, or stale behind, a newer report of its node; lost with line: let go past the 2-minute hold with its `lost` line',
      'silent: sent, then neither recorded, superseded nor lost with a line (goal 0); store disagrees: nodes whose stored report is not the newest the consumer recorded (goal 0)',
      ...results.flatMap((result) => [
        `${result.name}: ${result.notes.join('; ')}${result.converged === undefined ? '' : result.converged ? ' (converged)' : ' (DID NOT CONVERGE)'}`,
        ...result.silentReports.slice(0, 5).map((report) => `  silent: ${report}`),
        ...result.storeDisagrees.slice(0, 5).map((node) => `  store disagrees: ${node}`),
      ]),
    ],
  };
}
