/** `push-send` → `PushSend`: the form function names take in logical ids and ASL placeholders. */
export function pascalCase(kebab: string): string {
  return kebab
    .split(/[-_]/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The ASL placeholder a function's ARN fills: `push-send` → `PushSendFunctionArn`. */
export function functionArnPlaceholder(functionName: string): string {
  return `${pascalCase(functionName)}FunctionArn`;
}

/** Problems found in a construct's props, reported together before anything is built. */
export class MeshConstructPropsError extends Error {
  override name = 'MeshConstructPropsError';
  readonly problems: readonly string[];
  constructor(construct: string, problems: readonly string[]) {
    super(`${construct}: ${problems.length} problem(s): ${problems.join('; ')}`);
    this.problems = problems;
  }
}

export function throwIfProblems(construct: string, problems: readonly string[]): void {
  if (problems.length > 0) throw new MeshConstructPropsError(construct, problems);
}
