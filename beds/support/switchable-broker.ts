#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { embeddedBrokerService } from '../../lib/local/broker-service.ts';
import { controlEventSource } from '../../lib/local/event-source-control.ts';
import { runLocalRuntime } from '../../lib/local/main.ts';
import type { LocalService } from '../../lib/local/services.ts';
import {
  type CodedLine,
  lineFormatOf,
  printedLine,
  say as sayLine,
} from '../../lib/server/core/coded-lines.ts';
import { bedLines } from './bed-lines.ts';

/**
 * The local control plane whose embedded broker a bed can take away: while the file
 * BED_BROKER_OFF names exists, the broker is stopped (its clients dropped, its port closed, its
 * signals lost, as an IoT outage would); when the file is gone it starts again on the same port.
 * Everything else runs untouched.
 */
const switchFile = process.env.BED_BROKER_OFF;
if (!switchFile) {
  process.stderr.write('switchable-broker: BED_BROKER_OFF must name a file\n');
  process.exit(2);
}

const format = lineFormatOf(process.env.MESH_LOG_FORMAT);
const say = (line: CodedLine<Record<string, never>>) =>
  process.stdout.write(printedLine(sayLine(line, {}), format, 'bed: '));

const switchableBroker: LocalService = {
  name: 'the embedded MQTT broker (the bed can stop it)',
  async start(parts) {
    let running: { stop(): Promise<void> } | undefined = await embeddedBrokerService.start(parts);
    let turning = false;
    const timer = setInterval(async () => {
      if (turning) return;
      turning = true;
      try {
        const off = existsSync(switchFile);
        if (off && running) {
          await running.stop();
          running = undefined;
          say(bedLines.brokerStopped);
        } else if (!off && !running) {
          running = await embeddedBrokerService.start(parts);
          say(bedLines.brokerStarted);
        }
      } finally {
        turning = false;
      }
    }, 200);
    return {
      async stop() {
        clearInterval(timer);
        await running?.stop();
      },
    };
  },
};

await runLocalRuntime(process.env, { services: [controlEventSource, switchableBroker] });
