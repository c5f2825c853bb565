/**
 * Counts messages the consumer let go past the bound and publishes them as the Powertools
 * metric `LostMessages` (namespace Mesh, dimension service=mesh) after the batch that lost them,
 * and only then, so quiet batches publish nothing. Powertools Metrics is loaded on the first
 * loss, not at every function's start.
 */
export class LostMessageMetrics {
  #pending = 0;
  #metrics: Promise<{ publish(count: number): void }> | undefined;

  count(_type: string): void {
    this.#pending += 1;
  }

  async publish(): Promise<void> {
    if (this.#pending === 0) return;
    const count = this.#pending;
    this.#pending = 0;
    this.#metrics ??= import('@aws-lambda-powertools/metrics').then(({ Metrics, MetricUnit }) => {
      const metrics = new Metrics({ namespace: 'Mesh', serviceName: 'mesh' });
      return {
        publish: (lost: number) => {
          metrics.addMetric('LostMessages', MetricUnit.Count, lost);
          metrics.publishStoredMetrics();
        },
      };
    });
    (await this.#metrics).publish(count);
  }
}
