import { agentReleaseErrors } from '../core/agent-release/errors.ts';
import { storeErrors } from '../core/unavailable.ts';
import { problemsFrom } from './problem.ts';

/** The agent-release area's answers, from its table (lib/server/core/agent-release/errors.ts; docs/http-api.md lists them). */
export const agentReleaseProblem = problemsFrom(agentReleaseErrors, storeErrors);
