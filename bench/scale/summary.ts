import type { ScaleMesh } from '../scale.bench.ts';
import { median, sample } from '../support/stats.ts';
import type { BenchTable } from '../support/table.ts';

type Summary = { readonly nodes: number; readonly exact: boolean };

/**
 * The summary on the seeded mesh: how long the stream's aggregator took to count the seed (the
 * store was written straight, so every node item went through the stream), then `GET /summary`
 * against the 300 ms goal. Today's whole reads of the same mesh are the view section's rows.
 */
export async function summarySection(mesh: ScaleMesh): Promise<BenchTable[]> {
  const { size, runtime } = mesh;
  const read = async () => {
    const answer = await fetch(`${runtime.url}/summary`);
    const text = await answer.text();
    if (!answer.ok) throw new Error(`/summary answered ${answer.status}: ${text.slice(0, 200)}`);
    return { summary: JSON.parse(text) as Summary, bytes: Buffer.byteLength(text) };
  };
  const waitStarted = performance.now();
  const waitLimitMs = Number(process.env.MESH_BENCH_SCALE_DRAIN_SECONDS ?? 900) * 1000;
  let counted = (await read()).summary;
  while (counted.nodes < size && performance.now() - waitStarted < waitLimitMs) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    counted = (await read()).summary;
  }
  const drainedS = (performance.now() - waitStarted) / 1000;
  let bytes = 0;
  const times = await sample(21, async () => {
    bytes = Math.max(bytes, (await read()).bytes);
  });
  const ms = median(times);
  return [
    {
      title: `summary, ${size.toLocaleString('en')} nodes`,
      columns: ['read', 'median ms', 'largest KiB', 'goal'],
      rows: [
        [
          'GET /summary (21 reads)',
          Math.round(ms),
          (bytes / 1024).toFixed(1),
          ms <= 300 ? 'met (≤ 300 ms)' : 'MISSED (≤ 300 ms)',
        ],
        [
          `counted by the stream after the seed (${counted.nodes.toLocaleString('en')} nodes${counted.exact ? '' : ', not exact'})`,
          `${drainedS.toFixed(1)} s`,
          '',
          counted.nodes === size ? 'all' : 'MISSING',
        ],
      ],
      notes: ["today's whole-mesh reads of the same store are the views table's rows"],
    },
  ];
}
