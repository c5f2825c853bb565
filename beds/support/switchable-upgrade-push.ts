#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { runLocalRuntime } from '../../lib/local/main.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { PushFlow, PushRequest } from '../../lib/server/core/push/ports.ts';

/**
 * The local control plane, with one fault a bed can switch on: while the file BED_FAIL_UPGRADE_PUSH
 * names exists, the push the control queue's consumer starts after setting a module's version
 * fails, as a Step Functions start that is throttled or a flow that times out would. Every
 * other push (the operator's) goes through untouched.
 */
class SwitchablePushFlow implements PushFlow {
  readonly #inner: PushFlow;
  readonly #switch: string;
  constructor(inner: PushFlow, switchFile: string) {
    this.#inner = inner;
    this.#switch = switchFile;
  }
  push(request: PushRequest) {
    if (existsSync(this.#switch))
      return Promise.reject(
        Object.assign(new Error('the bed switched the upgrade push off'), { name: 'ExecutionLimitExceeded' }),
      );
    return this.#inner.push(request);
  }
}

const switchFile = process.env.BED_FAIL_UPGRADE_PUSH;
if (!switchFile) {
  process.stderr.write('switchable-upgrade-push: BED_FAIL_UPGRADE_PUSH must name a file\n');
  process.exit(2);
}
await runLocalRuntime(process.env, {
  wire: (config) => {
    const parts = localPartsFor(config);
    const consumer = { ...parts.consumer, pushFlow: new SwitchablePushFlow(parts.pushFlow, switchFile) };
    // the same parts (one embedded broker), the consumer's push switched
    Object.defineProperty(parts, 'consumer', { value: consumer });
    return parts;
  },
});
