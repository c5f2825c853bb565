import { describe, expect, it } from 'vitest';
import { displayName } from '../../../tools/rehearsal/assembly.ts';
import { RehearsalProblem } from '../../../tools/rehearsal/problems.ts';
import { fixtureReferences, fixtureTemplate } from './fixture.ts';

describe('References', () => {
  const references = fixtureReferences({
    ...fixtureTemplate,
    Parameters: { Stage: { Default: 'v1' } },
    Conditions: { IsV1: { 'Fn::Equals': [{ Ref: 'Stage' }, 'v1'] } },
  });

  it('gives each resource a name and ARN in the one fake account and region', () => {
    expect(references.resolve({ Ref: 'Table' }, 'here')).toBe('Mesh-Table');
    expect(references.resolve({ 'Fn::GetAtt': ['Table', 'Arn'] }, 'here')).toBe(
      'arn:aws:dynamodb:eu-west-1:000000000000:table/Mesh-Table',
    );
    expect(references.resolve({ 'Fn::GetAtt': 'Role.Arn' }, 'here')).toBe(
      'arn:aws:iam::000000000000:role/Mesh-Role',
    );
  });

  it('names FIFO queues as SQS needs, with their URLs', () => {
    expect(references.resolve({ 'Fn::GetAtt': ['Queue', 'QueueName'] }, 'here')).toBe('Mesh-Queue.fifo');
    expect(references.resolve({ Ref: 'Queue' }, 'here')).toBe(
      'https://sqs.eu-west-1.amazonaws.com/000000000000/Mesh-Queue.fifo',
    );
  });

  it('resolves Join, Sub, Select, Split, If and the pseudo parameters', () => {
    const arn = { 'Fn::GetAtt': ['Fn', 'Arn'] };
    expect(references.resolve({ 'Fn::Join': ['/', ['a', { Ref: 'AWS::Region' }]] }, 'here')).toBe(
      'a/eu-west-1',
    );
    expect(
      references.resolve({ 'Fn::Sub': 'arn:${AWS::Partition}:x:${Table}:${Fn.Arn}:${!Literal}' }, 'here'),
    ).toBe('arn:aws:x:Mesh-Table:arn:aws:lambda:eu-west-1:000000000000:function:Mesh-Fn:${Literal}');
    expect(references.resolve({ 'Fn::Select': [3, { 'Fn::Split': [':', arn] }] }, 'here')).toBe('eu-west-1');
    expect(references.resolve({ 'Fn::If': ['IsV1', 'yes', 'no'] }, 'here')).toBe('yes');
  });

  it('leaves out what AWS::NoValue stands in', () => {
    expect(references.resolve({ A: 1, B: { Ref: 'AWS::NoValue' } }, 'here')).toEqual({ A: 1 });
    expect(references.resolve(['a', { Ref: 'AWS::NoValue' }], 'here')).toEqual(['a']);
  });

  it('fails where a reference cannot be resolved, naming the place and the reference', () => {
    expect(() => references.resolve({ Ref: 'Nothing' }, 'function Fn environment')).toThrow(
      new RehearsalProblem(
        'template',
        'function Fn environment: Ref Nothing names no resource, and no parameter with a default',
      ),
    );
    expect(() => references.resolve({ 'Fn::GetAtt': ['Table', 'Nope'] }, 'here')).toThrow(/Table\.Nope/);
    expect(() => references.resolve({ 'Fn::ImportValue': 'x' }, 'here')).toThrow(/Fn::ImportValue/);
  });

  it('finds the resource a physical value names', () => {
    expect(references.logicalIdFor('arn:aws:dynamodb:eu-west-1:000000000000:table/Mesh-Table')).toBe('Table');
    expect(references.logicalIdFor('Mesh-Fn')).toBe('Fn');
    expect(references.logicalIdFor('elsewhere')).toBeUndefined();
  });

  it('names resources by their path in the CDK app', () => {
    expect(displayName(fixtureTemplate, 'Fn')).toBe('Functions/Fn');
    expect(displayName(fixtureTemplate, 'Table')).toBe('Table');
  });
});
