import { describe, expect, it } from 'vitest';
import { githubTokenAudience, githubTokenIssuer } from '../../lib/deploy/github-oidc.ts';
import { MeshConstructPropsError } from '../../lib/deploy/names.ts';
import { fixtureStack } from './support.ts';

type Resource = { Type: string; Properties: Record<string, unknown> };
/** The stack's resources, its nested stacks' in it (fixtureStack's one synthesis). */
const resourcesOf = ({ template }: ReturnType<typeof fixtureStack>) =>
  (template.toJSON() as { Resources: Record<string, Resource> }).Resources;
const ofType = (resources: Record<string, Resource>, type: string) =>
  Object.values(resources).filter((resource) => resource.Type === type);

/** The GitHub Action's provider and role (lib/deploy/github-oidc.ts), in the Edge nested stack. */
describe('GithubOidc', () => {
  /** The stack's roles GitHub's tokens may assume, each with its one trust statement. */
  const githubRoles = (resources: Record<string, Resource>) =>
    ofType(resources, 'AWS::IAM::Role')
      .filter((role) => JSON.stringify(role.Properties.AssumeRolePolicyDocument).includes(githubTokenIssuer))
      .map((role) => {
        const { Statement } = role.Properties.AssumeRolePolicyDocument as {
          Statement: Record<string, unknown>[];
        };
        expect(Statement).toHaveLength(1);
        return {
          statement: Statement[0] as Record<string, unknown>,
          policies: JSON.stringify(role.Properties.ManagedPolicyArns),
        };
      });
  const trust = (subject: string) => ({
    StringEquals: {
      [`${githubTokenIssuer}:aud`]: githubTokenAudience,
      [`${githubTokenIssuer}:sub`]: subject,
    },
  });

  it('is in the Edge stack with -c githubRepo: a provider, MeshViewer for pull requests, MeshOperator for main alone', () => {
    const withRepo = fixtureStack({ github: { repo: 'acme/fleet' } });
    const { stack } = withRepo;
    expect(stack.github?.node.scope).toBe(stack.edge);
    const edge = resourcesOf(withRepo);
    const [provider] = ofType(edge, 'AWS::IAM::OIDCProvider');
    expect(provider?.Properties).toEqual({
      Url: `https://${githubTokenIssuer}`,
      ClientIdList: [githubTokenAudience],
    });
    const roles = githubRoles(edge);
    expect(roles).toHaveLength(2);
    const viewer = roles.find((role) => role.policies.includes('MeshViewer'));
    const operator = roles.find((role) => role.policies.includes('MeshOperator'));
    for (const role of roles) expect(role.statement.Action).toBe('sts:AssumeRoleWithWebIdentity');
    expect(viewer?.statement.Condition).toEqual(trust('repo:acme/fleet:pull_request'));
    expect(viewer?.policies).toContain('MeshViewer');
    expect(viewer?.policies).not.toMatch(/MeshOperator|MeshAdmin/);
    expect(operator?.statement.Condition).toEqual(trust('repo:acme/fleet:ref:refs/heads/main'));
    expect(operator?.policies).toContain('MeshOperator');
    expect(operator?.policies).not.toMatch(/MeshViewer|MeshAdmin/);
    expect(stack.node.tryFindChild('GitHubViewerRoleArn')).toBeDefined();
    expect(stack.node.tryFindChild('GitHubOperatorRoleArn')).toBeDefined();

    // without the context: neither, anywhere in the stack
    const without = fixtureStack();
    expect(without.stack.github).toBeUndefined();
    expect(JSON.stringify(resourcesOf(without))).not.toContain(githubTokenIssuer);
  });

  it('lets -c githubBranch name the branch whose runs apply, and refuses one with a wildcard', () => {
    const release = githubRoles(
      resourcesOf(fixtureStack({ github: { repo: 'acme/fleet', branch: 'release/v2' } })),
    );
    expect(release.map((role) => role.statement.Condition)).toContainEqual(
      trust('repo:acme/fleet:ref:refs/heads/release/v2'),
    );
    for (const branch of ['*', 'main*', 'a..b', '/main', 'main/'])
      expect(() => fixtureStack({ github: { repo: 'acme/fleet', branch } }), branch).toThrow(
        MeshConstructPropsError,
      );
  });

  it('holds MeshAdmin when the workflow may prune, keeps the account provider given, and refuses a repo not owner/name', () => {
    const pruning = fixtureStack({
      github: {
        repo: 'acme/fleet',
        prune: true,
        existingProviderArn: 'arn:aws:iam::123456789012:oidc-provider/x',
      },
    });
    const edge = resourcesOf(pruning);
    expect(ofType(edge, 'AWS::IAM::OIDCProvider')).toEqual([]);
    const text = JSON.stringify(ofType(edge, 'AWS::IAM::Role'));
    expect(text).toContain('arn:aws:iam::123456789012:oidc-provider/x');
    const admin = githubRoles(edge).find((role) => role.policies.includes('MeshAdmin'));
    expect(admin?.statement.Condition).toEqual(trust('repo:acme/fleet:ref:refs/heads/main'));
    expect(() => fixtureStack({ github: { repo: 'acme/fleet:*' } })).toThrow(MeshConstructPropsError);
  });
});
