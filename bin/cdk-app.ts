#!/usr/bin/env node
import { App, Validations } from 'aws-cdk-lib';
import { MeshStack } from '../lib/deploy/mesh-stack.ts';
import { AwsSolutionsChecks } from '../lib/deploy/nag.ts';
import { releaseKeysOf } from '../lib/server/setup/config.ts';

/**
 * The CDK app. Context: `stackName` (default Mesh), `retainData` ('false' lets the tables go
 * with the stack, for trials), `waf` ('false' leaves out the web ACL limiting requests per
 * address: trials, LocalStack), `enrolPerAddress` and `requestsPerAddress` (its limits, for a
 * fleet behind one NAT address: docs/deploy.md), `alarmEmail` (an address the alarm topic
 * mails), `eventsEmail` (an address mailed the events a person has to act on: docs/events.md),
 * `releaseKeys` (KEY,KEY: the release keys a published `mesh-host` must be signed by), `githubRepo`
 * (owner/name: GitHub's OIDC provider and two roles its workflows assume,
 * MeshViewer from pull requests and MeshOperator from the `githubBranch` (default main), MeshAdmin
 * instead with `githubPrune` 'true'; `githubOidcProvider` the ARN of
 * the account's provider when it has one: docs/gitops.md), `bundle` ('false' writes the template without building the functions' bundles, for the
 * tests that read only the template: docs/rehearsal.md). Region and account come from the CLI's
 * environment.
 */
const app = new App();
/** A firewall limit given with `-c NAME=N`; ApiFirewall refuses one WAF does not take. */
const limitFromContext = (name: 'enrolPerAddress' | 'requestsPerAddress') => {
  const given = app.node.tryGetContext(name);
  return given === undefined ? {} : { [name]: Number(given) };
};
// The CLI asks for every stack's bundles and refuses `aws:` keys from the command line.
if (String(app.node.tryGetContext('bundle')) === 'false') app.node.setContext('aws:cdk:bundling-stacks', []);
new MeshStack(app, app.node.tryGetContext('stackName') ?? 'Mesh', {
  retainData: app.node.tryGetContext('retainData') !== 'false',
  firewall:
    String(app.node.tryGetContext('waf')) === 'false'
      ? false
      : {
          ...limitFromContext('enrolPerAddress'),
          ...limitFromContext('requestsPerAddress'),
        },
  ...(app.node.tryGetContext('alarmEmail')
    ? { alarmEmail: String(app.node.tryGetContext('alarmEmail')) }
    : {}),
  ...(app.node.tryGetContext('eventsEmail')
    ? { eventsEmail: String(app.node.tryGetContext('eventsEmail')) }
    : {}),
  ...(app.node.tryGetContext('releaseKeys')
    ? { releaseKeys: releaseKeysOf(String(app.node.tryGetContext('releaseKeys'))) }
    : {}),
  ...(app.node.tryGetContext('githubRepo')
    ? {
        github: {
          repo: String(app.node.tryGetContext('githubRepo')),
          ...(app.node.tryGetContext('githubBranch')
            ? { branch: String(app.node.tryGetContext('githubBranch')) }
            : {}),
          prune: String(app.node.tryGetContext('githubPrune')) === 'true',
          ...(app.node.tryGetContext('githubOidcProvider')
            ? { existingProviderArn: String(app.node.tryGetContext('githubOidcProvider')) }
            : {}),
        },
      }
    : {}),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(
  new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true }),
);
app.synth();
