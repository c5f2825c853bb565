/**
 * Counts occurrences and publishes them as one Powertools metric (namespace Mesh, dimension
 * service=mesh) when asked, after the invocation that counted them, and only then, so quiet
 * invocations publish nothing. Powertools Metrics is loaded on the first count published, not
 * at every function's start.
 */
export class CountedMetric {
  readonly #name: string;
  #pending = 0;
  #metrics: Promise<{ publish(count: number): void }> | undefined;

  constructor(name: string) {
    this.#name = name;
  }

  count(): void {
    this.#pending += 1;
  }

  async publish(): Promise<void> {
    if (this.#pending === 0) return;
    const count = this.#pending;
    this.#pending = 0;
    this.#metrics ??= import('@aws-lambda-powertools/metrics').then(({ Metrics, MetricUnit }) => {
      const metrics = new Metrics({ namespace: 'Mesh', serviceName: 'mesh' });
      return {
        publish: (counted: number) => {
          metrics.addMetric(this.#name, MetricUnit.Count, counted);
          metrics.publishStoredMetrics();
        },
      };
    });
    (await this.#metrics).publish(count);
  }
}
