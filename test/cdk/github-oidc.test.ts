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
  it('is in the Edge stack with -c githubRepo: a provider and a role only that repository assumes, holding MeshOperator', () => {
    const withRepo = fixtureStack({ github: { repo: 'acme/fleet' } });
    const { stack } = withRepo;
    expect(stack.github?.node.scope).toBe(stack.edge);
    const edge = resourcesOf(withRepo);
    const [provider] = ofType(edge, 'AWS::IAM::OIDCProvider');
    expect(provider?.Properties).toEqual({
      Url: `https://${githubTokenIssuer}`,
      ClientIdList: [githubTokenAudience],
    });
    const roles = ofType(edge, 'AWS::IAM::Role').filter((role) =>
      JSON.stringify(role.Properties.AssumeRolePolicyDocument).includes(githubTokenIssuer),
    );
    expect(roles).toHaveLength(1);
    const role = roles[0] as Resource;
    const [statement] = (role.Properties.AssumeRolePolicyDocument as { Statement: Record<string, unknown>[] })
      .Statement;
    expect(statement?.Action).toBe('sts:AssumeRoleWithWebIdentity');
    expect(statement?.Condition).toEqual({
      StringEquals: { [`${githubTokenIssuer}:aud`]: githubTokenAudience },
      StringLike: { [`${githubTokenIssuer}:sub`]: 'repo:acme/fleet:*' },
    });
    const policies = JSON.stringify(role.Properties.ManagedPolicyArns);
    expect(policies).toContain('MeshOperator');
    expect(policies).not.toContain('MeshAdmin');
    expect(stack.node.tryFindChild('GitHubRoleArn')).toBeDefined();

    // without the context: neither, anywhere in the stack
    const without = fixtureStack();
    expect(without.stack.github).toBeUndefined();
    expect(JSON.stringify(resourcesOf(without))).not.toContain(githubTokenIssuer);
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
    expect(text).toContain('MeshAdmin');
    expect(() => fixtureStack({ github: { repo: 'acme/fleet:*' } })).toThrow(MeshConstructPropsError);
  });
});
