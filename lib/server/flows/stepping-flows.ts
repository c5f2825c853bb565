import { fileURLToPath } from 'node:url';

/**
 * The flows that step one job until it is finished (Advance → Finished? → Wait → Advance), each a
 * Standard workflow on AWS: a rollout waits on its hosts, and an apply's parts together outlast
 * Express's five minutes. Each names its ASL file, the trigger of the one function its Task
 * invokes, the construct's id, and why it must be Standard (said by the template checks).
 */
export const steppingFlows = {
  rollout: {
    id: 'RolloutFlow',
    trigger: 'rollout-flow',
    aslPath: fileURLToPath(new URL('./rollout.asl.json', import.meta.url)),
    aslFile: 'lib/server/flows/rollout.asl.json',
    standardFor: 'a rollout that waits on hosts',
  },
  apply: {
    id: 'ApplyFlow',
    trigger: 'apply-flow',
    aslPath: fileURLToPath(new URL('./apply.asl.json', import.meta.url)),
    aslFile: 'lib/server/flows/apply.asl.json',
    standardFor: 'an apply job whose parts outlast five minutes',
  },
} as const;

export type SteppingFlow = (typeof steppingFlows)[keyof typeof steppingFlows];
export type SteppingTrigger = SteppingFlow['trigger'];
