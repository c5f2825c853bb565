#!/usr/bin/env node
import { hostProgram } from '../lib/clients/host/commands/program.ts';

// The host agent. Each subcommand lives in lib/host/commands/<name>.ts and is loaded when named.
// No top-level await: the packaged executables run this file as CommonJS (Node's single
// executable applications start CommonJS), and an unhandled rejection still exits 1.
void hostProgram(process.argv).then((program) => program.parseAsync(process.argv));
