import { describe, expect, it } from 'vitest';
import type { CfnTemplate } from '../../../tools/rehearsal/assembly.ts';
import { IamCheck, type Principal } from '../../../tools/rehearsal/iam-check.ts';
import { type PolicyDocument, TemplatePolicies } from '../../../tools/rehearsal/iam-policies.ts';
import { LeadingKeyKinds, leadingKeyPatterns } from '../../../tools/rehearsal/leading-keys.ts';
import { fixtureReferences, fixtureTemplate } from './fixture.ts';

const tableArn = 'arn:aws:dynamodb:eu-west-1:000000000000:table/Mesh-Table';
const fn: Principal = { kind: 'role', roleLogicalId: 'Role', session: 'Mesh-Fn', label: 'Functions/Fn' };
const like = (patterns: string[]): PolicyDocument => ({
  Statement: [
    {
      Effect: 'Allow',
      Action: 'dynamodb:PutItem',
      Resource: '*',
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } },
    },
  ],
});

describe('partition keys judged by kind', () => {
  it('are read from policies that test them with ForAllValues:StringLike and literal patterns only', () => {
    expect(leadingKeyPatterns([like(['node#*', 'pushes']), like(['node#*'])])).toEqual(['node#*', 'pushes']);
    expect(leadingKeyPatterns([{ Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] }])).toEqual(
      [],
    );
    const equals: PolicyDocument = {
      Statement: [
        {
          Effect: 'Allow',
          Action: '*',
          Resource: '*',
          Condition: { StringEquals: { 'dynamodb:LeadingKeys': 'a' } },
        },
      ],
    };
    expect(leadingKeyPatterns([like(['node#*']), equals])).toBeUndefined();
    // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, as a policy holds it
    expect(leadingKeyPatterns([like(['node#${aws:username}'])])).toBeUndefined();
  });

  it('stand a key for the first one that matches exactly the same patterns', () => {
    const kinds = new LeadingKeyKinds(['node#*', 'node#web-?', 'pushes']);
    expect(kinds.standIn('node#app')).toBe('node#app');
    expect(kinds.standIn('node#db')).toBe('node#app');
    expect(kinds.standIn('node#web-1')).toBe('node#web-1');
    expect(kinds.standIn('node#web-2')).toBe('node#web-1');
    expect(kinds.standIn('pushes')).toBe('pushes');
    expect(kinds.standIn('pushes#1')).toBe('pushes#1');
    expect(kinds.standIn('secret#1')).toBe('pushes#1');
    // StringLike is case-sensitive; a key that matches only when case is folded is a kind of its own
    expect(kinds.standIn('NODE#app')).toBe('NODE#app');
    expect(kinds.standIn('Node#db')).toBe('NODE#app');
  });

  it('still deny a key of a kind no statement allows, after one of an allowed kind', async () => {
    const references = fixtureReferences(fixtureTemplate as CfnTemplate);
    const iam = new IamCheck(new TemplatePolicies(references), references);
    const put = (keys: string[]) =>
      iam.authorize(fn, {
        action: 'dynamodb:PutItem',
        resource: tableArn,
        context: { 'dynamodb:LeadingKeys': keys },
      });

    expect(await put(['proof#a'])).toEqual({ allowed: true });
    expect(await put(['proof#b'])).toEqual({ allowed: true });
    expect((await put(['node#a'])).allowed).toBe(false);
    expect((await put(['proof#c', 'node#b'])).allowed).toBe(false);
    expect(await put(['proof#d', 'proof#e'])).toEqual({ allowed: true });
  });
});
