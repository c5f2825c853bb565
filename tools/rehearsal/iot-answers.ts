import type { PolicyDocument } from './iam-policies.ts';

/** What a custom authorizer's Allow gives a connection: who it is and what it may do. */
export type ConnectAnswer = { readonly principalId: string; readonly policies: readonly PolicyDocument[] };

/** IoT's bounds on an authorizer's answer (AWS IoT custom authentication, "Defining your Lambda function"). */
const seconds = { min: 300, max: 86_400 };
const maxPolicies = 10;
const maxPolicyChars = 2048;

type Answer = {
  isAuthenticated?: unknown;
  principalId?: unknown;
  disconnectAfterInSeconds?: unknown;
  refreshAfterInSeconds?: unknown;
  policyDocuments?: unknown;
};

const asText = (document: unknown) => (typeof document === 'string' ? document : JSON.stringify(document));

/** What is wrong with an authorizer's answer that IoT would refuse, or undefined when it is well formed. */
export function invalidAnswer(answer: unknown): string | undefined {
  const candidate = answer as Answer | null;
  if (!candidate || typeof candidate !== 'object') return 'it answered no object';
  if (typeof candidate.isAuthenticated !== 'boolean') return 'its answer has no isAuthenticated boolean';
  if (typeof candidate.principalId !== 'string' || !/^[a-zA-Z0-9]{1,128}$/.test(candidate.principalId))
    return `its principalId ${JSON.stringify(candidate.principalId)} is not 1 to 128 letters and digits`;
  for (const key of ['disconnectAfterInSeconds', 'refreshAfterInSeconds'] as const) {
    const value = candidate[key];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < seconds.min || value > seconds.max)
      return `its ${key} ${JSON.stringify(value)} is not a whole number from ${seconds.min} to ${seconds.max}`;
  }
  if (!Array.isArray(candidate.policyDocuments)) return 'its answer has no policyDocuments list';
  if (candidate.policyDocuments.length > maxPolicies)
    return `it answered ${candidate.policyDocuments.length} policy documents, over IoT's ${maxPolicies}`;
  for (const document of candidate.policyDocuments) {
    const text = asText(document);
    if (text.length > maxPolicyChars)
      return `a policy document of ${text.length} characters is over IoT's ${maxPolicyChars}`;
    try {
      const parsed = JSON.parse(text) as { Statement?: unknown };
      if (!Array.isArray(parsed.Statement)) return 'a policy document has no Statement list';
    } catch {
      return 'a policy document is not JSON';
    }
  }
  return undefined;
}

/** The policy documents of a well-formed answer, each as an object (IoT takes objects or JSON strings). */
export function policiesOf(answer: unknown): PolicyDocument[] {
  return ((answer as Answer).policyDocuments as unknown[]).map(
    (document) => JSON.parse(asText(document)) as PolicyDocument,
  );
}
