#!/usr/bin/env node
import { runLocalRuntime } from '../lib/local/main.ts';

/** `npm start`: the whole control plane on this machine (lib/local/main.ts says what it reads). */
await runLocalRuntime(process.env);
