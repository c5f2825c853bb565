import type { PolicyDocument } from './iam-policies.ts';

/**
 * The AWS-managed policies the rehearsal can read, by name, as AWS publishes them. CDK attaches
 * AWSLambdaBasicExecutionRole to the functions it makes for itself (the AwsCustomResource
 * provider); any other managed policy is not in the template, so a role with one is a problem.
 */
const awsManaged: Readonly<Record<string, PolicyDocument>> = {
  'service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: '*',
      },
    ],
  },
};

/** The document of an AWS-managed policy by its ARN (`arn:<partition>:iam::aws:policy/<path and name>`). */
export function awsManagedPolicy(arn: string): PolicyDocument | undefined {
  const name = /^arn:[\w-]+:iam::aws:policy\/(.+)$/.exec(arn)?.[1];
  return name ? awsManaged[name] : undefined;
}
