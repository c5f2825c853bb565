import * as z from 'zod';
import { MeshError } from './errors.ts';

/** A node's labels: what selectors (`--on`, freezes, `nodes:` groups) match. */
export type Labels = Readonly<Record<string, string>>;

/** Label keys and values never hold `=`, `!` or `,`, so a selector (`role=web,zone!=a`) reads them back. */
export const labelKey = z
  .string()
  .regex(
    /^[a-z][a-z0-9_-]{0,62}$/,
    'a label key is a lowercase letter, then up to 62 lowercase letters, digits, underscores or hyphens',
  );
export const labelValue = z
  .string()
  .regex(
    /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/,
    'a label value is 1 to 63 letters, digits, dots, underscores or hyphens, starting and ending with a letter or digit (quote numbers: "1")',
  );

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
