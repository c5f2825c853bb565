#!/usr/bin/env node
import { registerSigV4Signer } from '../lib/clients/cli/command-context.ts';
import { meshProgram } from '../lib/clients/cli/commands/program.ts';
import { quietWhenReaderCloses } from '../lib/clients/common/closed-pipes.ts';

quietWhenReaderCloses();
registerSigV4Signer();
// No top-level await: the packaged executables run this file as CommonJS (Node's single
// executable applications start CommonJS), and an unhandled rejection still exits 1.
void meshProgram(process.argv).then((program) => program.parseAsync(process.argv));
