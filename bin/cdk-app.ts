#!/usr/bin/env node
import { App } from 'aws-cdk-lib';
import { MeshStack } from '../lib/constructs/mesh-stack.ts';

const app = new App();
new MeshStack(app, app.node.tryGetContext('stackName') ?? 'Mesh', {
  retainData: app.node.tryGetContext('retainData') !== 'false',
});
app.synth();
