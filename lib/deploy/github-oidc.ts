import { Duration } from 'aws-cdk-lib';
import { CfnOIDCProvider, type IManagedPolicy, Role, WebIdentityPrincipal } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { throwIfProblems } from './names.ts';

/** Where GitHub Actions' OIDC tokens come from, and the audience aws-actions/configure-aws-credentials asks for. */
export const githubTokenIssuer = 'token.actions.githubusercontent.com';
export const githubTokenAudience = 'sts.amazonaws.com';

/** GitHub's own rules for an owner and a repository name: `owner/name`, nothing else. */
const githubRepoPattern = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;

/** A branch as a ref names it: no wildcard, no `..`, none of git's refused characters. */
const githubBranchPattern = /^(?!.*\.\.)(?!\/)(?!.*\/$)[A-Za-z0-9._/-]{1,200}$/;

export type GithubOidcProps = {
  /** `owner/name` (`-c githubRepo=owner/name`): only this repository's workflows may assume the roles. */
  readonly repo: string;
  /** The branch whose pushes apply (`-c githubBranch=NAME`). @default 'main' */
  readonly branch?: string;
  /** What a pull request's run may do: MeshViewer, the plan. */
  readonly viewerPolicy: IManagedPolicy;
  /** What the branch's runs may do: MeshOperator, or MeshAdmin when the workflow may prune. */
  readonly operatorPolicy: IManagedPolicy;
  /**
   * The account's GitHub OIDC provider, when it has one already (`-c githubOidcProvider=ARN`): an
   * account holds one provider per issuer, and the stack keeps one it did not create.
   */
  readonly existingProviderArn?: string;
};

/** The token subject GitHub gives a run: of a pull request, or of a push to a branch (no environment). */
export const githubSubjects = {
  pullRequest: (repo: string) => `repo:${repo}:pull_request`,
  branch: (repo: string, branch: string) => `repo:${repo}:ref:refs/heads/${branch}`,
};

/**
 * What the GitHub Action (action.yml) signs in with: GitHub's OIDC provider and two roles, each
 * trusting a token only for STS and only from one kind of run of the named repository. A pull
 * request's run (`repo:OWNER/NAME:pull_request`) gets MeshViewer: it plans, and a branch anyone
 * may open a pull request from can change nothing. A push to the main branch
 * (`repo:OWNER/NAME:ref:refs/heads/main`) gets MeshOperator (or MeshAdmin): it applies. What a
 * workflow may do is what its role may do (docs/gitops.md).
 */
export class GithubOidc extends Construct {
  /** The provider's ARN: the one made here, or the account's own. */
  public readonly providerArn: string;
  /** Assumed by pull requests' runs: the plan. */
  public readonly viewerRole: Role;
  /** Assumed by runs of the main branch: the apply. */
  public readonly operatorRole: Role;

  constructor(scope: Construct, id: string, props: GithubOidcProps) {
    super(scope, id);
    const branch = props.branch ?? 'main';
    throwIfProblems('GithubOidc', [
      ...(githubRepoPattern.test(props.repo)
        ? []
        : [`githubRepo ${JSON.stringify(props.repo)} is not owner/name`]),
      ...(githubBranchPattern.test(branch)
        ? []
        : [
            `githubBranch ${JSON.stringify(branch)} is not a branch name (no *, no .., no leading or trailing /)`,
          ]),
    ]);
    // CloudFormation's own resource, not CDK's custom one: no function to deploy, and IAM checks
    // GitHub's certificate through its own trusted authorities, so no thumbprint is pinned.
    this.providerArn =
      props.existingProviderArn ??
      new CfnOIDCProvider(this, 'Provider', {
        url: `https://${githubTokenIssuer}`,
        clientIdList: [githubTokenAudience],
      }).attrArn;
    const roleFor = (roleId: string, subject: string, policy: IManagedPolicy, description: string) =>
      new Role(this, roleId, {
        description,
        maxSessionDuration: Duration.hours(1),
        // StringEquals on the whole subject: no wildcard, so no other branch, event or repository
        assumedBy: new WebIdentityPrincipal(this.providerArn, {
          StringEquals: {
            [`${githubTokenIssuer}:aud`]: githubTokenAudience,
            [`${githubTokenIssuer}:sub`]: subject,
          },
        }),
        managedPolicies: [policy],
      });
    this.viewerRole = roleFor(
      'ViewerRole',
      githubSubjects.pullRequest(props.repo),
      props.viewerPolicy,
      `Mesh: the GitHub Action of ${props.repo} on pull requests (plan)`,
    );
    this.operatorRole = roleFor(
      'OperatorRole',
      githubSubjects.branch(props.repo, branch),
      props.operatorPolicy,
      `Mesh: the GitHub Action of ${props.repo} on ${branch} (apply)`,
    );
  }
}
