import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * The few attribute types the enrolment and identity items use (strings, numbers, string sets,
 * maps of those), marshalled here so the adapters depend only on the client package.
 */
export type Plain = string | number | boolean | null | readonly Plain[] | { readonly [key: string]: Plain };

export function toAttribute(value: Plain): AttributeValue {
  if (value === null) return { NULL: true };
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (Array.isArray(value)) return { L: value.map(toAttribute) };
  return { M: toItem(value as { readonly [key: string]: Plain }) };
}

export function toItem(value: { readonly [key: string]: Plain | undefined }): Record<string, AttributeValue> {
  const item: Record<string, AttributeValue> = {};
  for (const [name, field] of Object.entries(value)) if (field !== undefined) item[name] = toAttribute(field);
  return item;
}

export function fromAttribute(value: AttributeValue): Plain {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.SS !== undefined) return value.SS;
  if (value.L !== undefined) return value.L.map(fromAttribute);
  if (value.M !== undefined) return fromItem(value.M);
  return null;
}

export function fromItem(item: Record<string, AttributeValue>): { [key: string]: Plain } {
  const plain: { [key: string]: Plain } = {};
  for (const [name, field] of Object.entries(item)) plain[name] = fromAttribute(field);
  return plain;
}
