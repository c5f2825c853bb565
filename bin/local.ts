#!/usr/bin/env node
import { runLocalRuntime } from '../lib/runtime/main.ts';

/** `npm start`: the whole control plane on this machine (lib/runtime/main.ts says what it reads). */
await runLocalRuntime(process.env);
