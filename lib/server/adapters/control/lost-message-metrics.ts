import { CountedMetric } from '../counted-metric.ts';

/** The messages the consumer let go past the bound, published as the metric `LostMessages`. */
export class LostMessageMetrics extends CountedMetric {
  constructor() {
    super('LostMessages');
  }

  override count(_type?: string): void {
    super.count();
  }
}
