#!/usr/bin/env node
import { enableCompileCache } from 'node:module';
import { isSea } from 'node:sea';

// V8's compiled code kept between calls (keyed by each file's content, never stale): a call
// then spends its CPU on the command, not on compiling the modules it loads. The single
// executable carries its own code cache. The program is imported after, so its modules are
// cached too.
if (!isSea()) enableCompileCache();
// No top-level await: the packaged executables run this file as CommonJS (Node's single
// executable applications start CommonJS), and an unhandled rejection still exits 1.
void import('../lib/clients/cli/commands/main.ts').then(({ runMesh }) => runMesh(process.argv));
