import * as z from 'zod';

/** The naming rules, one schema each, so every boundary says the same thing. */
const dnsLabelRule =
  'a DNS label: a lowercase letter, then up to 62 lowercase letters, digits or hyphens, not ending with a hyphen';
const dnsLabel = /^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const nodeName = z.string().regex(dnsLabel, `a node name must be ${dnsLabelRule}`);
export const moduleName = z.string().regex(dnsLabel, `a module name must be ${dnsLabelRule}`);
export const moduleVersion = z
  .string()
  .regex(
    /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/,
    'a version is 1 to 64 letters, digits, dots, pluses, underscores or hyphens',
  );
export const buildId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'a build id is 1 to 64 letters, digits, dots, underscores or hyphens',
  );

/** A provider's kind (`amqp`), as `mesh assign --provides` and the mesh file's `provides` take it. */
export const providerKind = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,31}$/,
    'a provider kind is a lowercase letter, then up to 31 letters, digits or hyphens',
  );

export type NodeName = z.infer<typeof nodeName>;
export type ModuleName = z.infer<typeof moduleName>;
