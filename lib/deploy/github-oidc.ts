import { Duration } from 'aws-cdk-lib';
import { CfnOIDCProvider, type IManagedPolicy, Role, WebIdentityPrincipal } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { throwIfProblems } from './names.ts';

/** Where GitHub Actions' OIDC tokens come from, and the audience aws-actions/configure-aws-credentials asks for. */
export const githubTokenIssuer = 'token.actions.githubusercontent.com';
export const githubTokenAudience = 'sts.amazonaws.com';

/** GitHub's own rules for an owner and a repository name: `owner/name`, nothing else. */
const githubRepoPattern = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;

export type GithubOidcProps = {
  /** `owner/name` (`-c githubRepo=owner/name`): only this repository's workflows may assume the role. */
  readonly repo: string;
  /** The policy the role holds: MeshOperator, or MeshAdmin when the workflow may prune. */
  readonly policy: IManagedPolicy;
  /**
   * The account's GitHub OIDC provider, when it has one already (`-c githubOidcProvider=ARN`): an
   * account holds one provider per issuer, and the stack keeps one it did not create.
   */
  readonly existingProviderArn?: string;
};

/**
 * What the GitHub Action (action.yml) signs in with: GitHub's OIDC provider and one role whose
 * trust takes a token only from the named repository (`repo:OWNER/NAME:*`, any branch, pull
 * request or environment of it) and only for STS. The role holds one managed policy of the
 * operators' roles, so what a workflow may do is what that role may do (docs/gitops.md).
 */
export class GithubOidc extends Construct {
  /** The provider's ARN: the one made here, or the account's own. */
  public readonly providerArn: string;
  public readonly role: Role;

  constructor(scope: Construct, id: string, props: GithubOidcProps) {
    super(scope, id);
    throwIfProblems('GithubOidc', [
      ...(githubRepoPattern.test(props.repo)
        ? []
        : [`githubRepo ${JSON.stringify(props.repo)} is not owner/name`]),
    ]);
    // CloudFormation's own resource, not CDK's custom one: no function to deploy, and IAM checks
    // GitHub's certificate through its own trusted authorities, so no thumbprint is pinned.
    this.providerArn =
      props.existingProviderArn ??
      new CfnOIDCProvider(this, 'Provider', {
        url: `https://${githubTokenIssuer}`,
        clientIdList: [githubTokenAudience],
      }).attrArn;
    this.role = new Role(this, 'Role', {
      description: `Mesh: the GitHub Action of ${props.repo} (plan on pull requests, apply on merge)`,
      maxSessionDuration: Duration.hours(1),
      assumedBy: new WebIdentityPrincipal(this.providerArn, {
        StringEquals: { [`${githubTokenIssuer}:aud`]: githubTokenAudience },
        StringLike: { [`${githubTokenIssuer}:sub`]: `repo:${props.repo}:*` },
      }),
      managedPolicies: [props.policy],
    });
  }
}
