import { type CfnElement, Stack, Validations } from 'aws-cdk-lib';
import nag from 'cdk-nag';
import type { IConstruct } from 'constructs';

/** cdk-nag is CommonJS whose named exports Node cannot detect; they are taken from its default here. */
export const { AwsSolutionsChecks } = nag;

/** A cdk-nag finding accepted on purpose, always with the reason it is right here. */
export type Acknowledgment = { readonly id: string; readonly reason: string };

/**
 * Records accepted cdk-nag findings on a construct (cdk-nag 3 reads CDK's own
 * acknowledgments). Each id names one finding, e.g. `AwsSolutions-IAM5[Resource::*]`.
 */
export function acknowledge(scope: IConstruct, ...findings: readonly Acknowledgment[]): void {
  if (findings.length > 0) Validations.of(scope).acknowledge(...findings);
}

/** How cdk-nag names a resource's ARN in a finding: `<LogicalId.Arn>`. */
export function arnInFinding(resource: IConstruct): string {
  const element = resource.node.defaultChild as CfnElement;
  return `<${Stack.of(resource).resolve(element.logicalId)}.Arn>`;
}
