import { exportJWK, generateKeyPair } from 'jose';
import {
  compose,
  type MintDetails,
  newGeneration,
  newProvisionSecret,
  sealWithHpke,
} from '../lib/core/mesh/declaration.ts';
import type { NodeSnapshot, SealingKey } from '../lib/core/mesh/model.ts';
import { sealingKeyOf } from '../lib/core/sealing/sealed-secret.ts';
import { SealedDeclarationOpener } from '../lib/host/agent/declaration-opener.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * What sealing costs where it is paid (docs/decisions/sealed-secrets.md): the mint, while
 * composing a node with N relations never minted (two HPKE seals a provision), and the host's
 * open of a declaration of N provisions before its hook runs (one open each). Beside each, the
 * same work as it was before sealing, in the same run: the mint with the secret kept as it is
 * (no seal), and a declaration with nothing to open. `MESH_BENCH_SEALING_RUNS` (default 9).
 */
const runs = Number(process.env.MESH_BENCH_SEALING_RUNS ?? 9);
const sizes = [20, 200, 2_000];

async function hostKeys() {
  const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  return { key: sealingKeyOf(await exportJWK(pair.publicKey)) as SealingKey, privateKey: pair.privateKey };
}

/** A consumer with `size` relations to `size` providers, none minted yet. */
function consumerOf(size: number, key: SealingKey): NodeSnapshot {
  return {
    node: 'web',
    assignments: Array.from({ length: size }, (_, i) => ({ module: `m${i}`, version: null, provides: null })),
    relations: Array.from({ length: size }, (_, i) => ({
      consumerModule: `m${i}`,
      providerNode: `p${i}`,
      providerModule: 'db',
      kind: 'sql',
    })),
    dependents: [],
    provisions: [],
    grants: [],
    sent: undefined,
    mark: undefined,
    sealingKey: key,
  };
}

const unsealed: MintDetails['seal'] = async (secret) => secret;

export async function run(): Promise<BenchTable[]> {
  const web = await hostKeys();
  const providers = await hostKeys();
  const mintRows: Array<Array<string | number>> = [];
  const openRows: Array<Array<string | number>> = [];
  for (const size of sizes) {
    const snapshot = consumerOf(size, web.key);
    const keys = new Map(snapshot.relations.map((r) => [r.providerNode, providers.key]));
    const mint = (seal: MintDetails['seal']): MintDetails => ({
      secret: newProvisionSecret,
      now: () => '2026-01-01T00:00:00.000Z',
      generation: newGeneration,
      seal,
    });
    const times = {
      sealed: [] as number[],
      plain: [] as number[],
      open: [] as number[],
      pass: [] as number[],
    };
    let sealedBody = '';
    let plainBody = '';
    for (let i = 0; i < runs; i += 1) {
      // alternate which goes first, so neither always runs on a warmer process
      for (const way of i % 2 === 0 ? (['sealed', 'plain'] as const) : (['plain', 'sealed'] as const)) {
        const started = performance.now();
        const composed = await compose(snapshot, keys, mint(way === 'sealed' ? sealWithHpke : unsealed));
        times[way].push(performance.now() - started);
        if (way === 'sealed') sealedBody = composed.canonical;
        else
          plainBody = JSON.stringify({
            ...composed.declaration,
            provisions: composed.declaration.provisions.map(({ sealed, ...p }) => ({ ...p, secret: sealed })),
          });
      }
      const opener = new SealedDeclarationOpener('web', () => web.privateKey);
      let started = performance.now();
      const opened = await opener.open(sealedBody);
      times.open.push(performance.now() - started);
      if (!opened.ok) throw new Error(opened.reason);
      started = performance.now();
      await opener.open(plainBody);
      times.pass.push(performance.now() - started);
    }
    const [sealed, plain, open, pass] = [times.sealed, times.plain, times.open, times.pass].map(median) as [
      number,
      number,
      number,
      number,
    ];
    mintRows.push([
      size,
      plain.toFixed(1),
      sealed.toFixed(1),
      ((sealed / size) * 1000).toFixed(0),
      (sealed / plain).toFixed(1),
      Buffer.byteLength(plainBody),
      Buffer.byteLength(sealedBody),
    ]);
    openRows.push([
      size,
      pass.toFixed(1),
      open.toFixed(1),
      ((open / size) * 1000).toFixed(0),
      (open / pass).toFixed(1),
    ]);
  }
  return [
    {
      title: `Minting N provisions while composing the consumer (median of ${runs})`,
      columns: [
        'provisions',
        'unsealed ms',
        'sealed ms',
        'sealed µs/provision',
        'ratio',
        'unsealed bytes',
        'sealed bytes',
      ],
      rows: mintRows,
      notes: ['sealed: a new secret sealed to the consumer and to the provider (HPKE X25519, AES-256-GCM)'],
    },
    {
      title: `The host opening a declaration of N provisions before its hook (median of ${runs})`,
      columns: ['provisions', 'nothing to open ms', 'open ms', 'µs/provision', 'ratio'],
      rows: openRows,
    },
  ];
}
