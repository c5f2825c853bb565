import { MeshError } from '../mesh/errors.ts';
import type { Labels } from './mesh.ts';
import { labelKey, labelValue } from './schema.ts';

/**
 * Label selectors, as `--on` takes them: `role=web`, `role=web,zone=a`, `role!=db`, `role` (has
 * the key), `!role` (lacks it). Every requirement must hold (Kubernetes' equality selectors).
 */
export type Requirement =
  | { readonly key: string; readonly op: '=' | '!='; readonly value: string }
  | { readonly key: string; readonly op: 'exists' | '!exists' };

export type Selector = readonly Requirement[];

export class BadSelectorError extends MeshError {
  override name = 'BadSelectorError';
  constructor(selector: string, why: string, options?: ErrorOptions) {
    super(`selector ${JSON.stringify(selector)}: ${why}`, options);
  }
}

export function parseSelector(text: string): Selector {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.some((part) => part === ''))
    throw new BadSelectorError(text, 'an empty requirement (role=web,zone=a)');
  return parts.map((part) => {
    const match = /^(!?)([^=!]+)(?:(!?=)(.*))?$/.exec(part);
    if (!match) throw new BadSelectorError(text, `${part} is not KEY=VALUE, KEY!=VALUE, KEY or !KEY`);
    const [, not = '', key = '', op, value] = match;
    const checkedKey = labelKey.safeParse(key);
    if (!checkedKey.success)
      throw new BadSelectorError(text, checkedKey.error.issues[0]?.message ?? 'bad key');
    if (op === undefined) return { key, op: not ? '!exists' : 'exists' };
    if (not)
      throw new BadSelectorError(text, `${part}: ! goes before a key alone (!role) or in != (role!=db)`);
    const checkedValue = labelValue.safeParse(value);
    if (!checkedValue.success)
      throw new BadSelectorError(text, checkedValue.error.issues[0]?.message ?? 'bad value');
    return { key, op: op === '=' ? '=' : '!=', value: value ?? '' };
  });
}

export function matchesSelector(selector: Selector, labels: Labels): boolean {
  return selector.every((requirement) => {
    const value = Object.hasOwn(labels, requirement.key) ? labels[requirement.key] : undefined;
    if (requirement.op === '=') return value === requirement.value;
    if (requirement.op === '!=') return value !== requirement.value;
    return (value !== undefined) === (requirement.op === 'exists');
  });
}

/** The selector written back, requirements sorted: one text per meaning. */
export const selectorText = (selector: Selector) =>
  selector
    .map((r) => ('value' in r ? `${r.key}${r.op}${r.value}` : r.op === 'exists' ? r.key : `!${r.key}`))
    .sort()
    .join(',');
