/** The part of the stack a problem was found in, for the report and its exit code. */
export type ProblemArea =
  | 'assembly'
  | 'template'
  | 'function'
  | 'api'
  | 'flow'
  | 'event-source'
  | 'iam'
  | 'iot'
  | 'custom-resource'
  | 'drive';

/**
 * Something in the synthesized stack that would fail a deploy or its first use, or that the
 * rehearsal cannot run and so cannot vouch for. Its message names the resource and what is wrong.
 */
export class RehearsalProblem extends Error {
  override name = 'RehearsalProblem';
  readonly area: ProblemArea;
  constructor(area: ProblemArea, message: string, options?: ErrorOptions) {
    super(message, options);
    this.area = area;
  }
}

/** Throws one problem naming every finding, or nothing when there are none. */
export function throwIfFindings(area: ProblemArea, findings: readonly string[]): void {
  if (findings.length === 1) throw new RehearsalProblem(area, findings[0] as string);
  if (findings.length > 1)
    throw new RehearsalProblem(area, `${findings.length} problems:\n  ${findings.join('\n  ')}`);
}
