/**
 * kubevirt_workqueue_* (client-go's workqueue metrics under upstream's prefix), one
 * series per controller queue (`name`): the queues call the sink on add, retry, hand-out
 * and done; depth and in-progress time are read on scrape.
 */
import type { WorkQueueMetricsSink } from '../runtime/workqueue';
import type { ComponentRegistry } from './registry';

/** Sinks for named work queues, all in one registry. */
export class WorkQueueMetrics {
  constructor(private readonly m: ComponentRegistry) {}

  /** The sink of the queue `name` (pass as the queue's `metrics`). */
  sink(name: string): WorkQueueMetricsSink {
    const l = { name };
    const adds = this.m.counter('kubevirt_workqueue_adds_total');
    const retries = this.m.counter('kubevirt_workqueue_retries_total');
    const waited = this.m.histogram('kubevirt_workqueue_queue_duration_seconds');
    const worked = this.m.histogram('kubevirt_workqueue_work_duration_seconds');
    adds.inc(l, 0);
    retries.inc(l, 0);
    return {
      added: () => adds.inc(l),
      retried: () => retries.inc(l),
      waited: (s) => waited.observe(l, s),
      worked: (s) => worked.observe(l, s),
    };
  }

  /** Depth and in-progress gauges from the queues now. */
  collect(queues: { name: string; queue: { len(): number; inProgressSeconds(): number[] } }[]): void {
    for (const { name, queue } of queues) {
      const running = queue.inProgressSeconds();
      this.m.gauge('kubevirt_workqueue_depth').set({ name }, queue.len());
      this.m.gauge('kubevirt_workqueue_unfinished_work_seconds').set(
        { name },
        running.reduce((a, b) => a + b, 0),
      );
      this.m
        .gauge('kubevirt_workqueue_longest_running_processor_seconds')
        .set({ name }, running.length ? Math.max(...running) : 0);
    }
  }
}
