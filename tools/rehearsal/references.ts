import type { CfnTemplate } from './assembly.ts';
import type { Identity, RehearsalEnvironment } from './identities.ts';
import { RehearsalProblem } from './problems.ts';

/** `AWS::NoValue`: the property it stands in is left out, as CloudFormation does. */
const noValue = Symbol('AWS::NoValue');

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The logical id a `Ref` or `Fn::GetAtt` names, without resolving it. */
export function referencedId(value: unknown): string | undefined {
  if (!isObject(value)) return undefined;
  if (typeof value.Ref === 'string') return value.Ref;
  const getAtt = value['Fn::GetAtt'];
  if (Array.isArray(getAtt)) return typeof getAtt[0] === 'string' ? getAtt[0] : undefined;
  if (typeof getAtt === 'string') return getAtt.split('.')[0];
  return undefined;
}

/**
 * Resolves CloudFormation's intrinsic functions against the rehearsal's identities: Ref,
 * Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split, Fn::FindInMap, Fn::Base64, Fn::If with
 * the template's Conditions, and the pseudo parameters. What it cannot resolve fails where it
 * is asked, naming the place (`where`) and the reference.
 */
export class References {
  readonly #template: CfnTemplate;
  readonly #env: RehearsalEnvironment;
  readonly #identities: ReadonlyMap<string, Identity>;

  constructor(template: CfnTemplate, env: RehearsalEnvironment, identities: ReadonlyMap<string, Identity>) {
    this.#template = template;
    this.#env = env;
    this.#identities = identities;
  }

  get template(): CfnTemplate {
    return this.#template;
  }

  get environment(): RehearsalEnvironment {
    return this.#env;
  }

  resolve(value: unknown, where: string): unknown {
    const resolved = this.#resolve(value, where);
    return resolved === noValue ? undefined : resolved;
  }

  resolveString(value: unknown, where: string): string {
    const resolved = this.resolve(value, where);
    if (typeof resolved === 'string') return resolved;
    if (typeof resolved === 'number' || typeof resolved === 'boolean') return String(resolved);
    throw new RehearsalProblem('template', `${where}: expected a string, found ${JSON.stringify(resolved)}`);
  }

  identity(logicalId: string): Identity | undefined {
    return this.#identities.get(logicalId);
  }

  /** The logical id whose Ref or any attribute is this value (a queue URL, a function ARN). */
  logicalIdFor(physical: string): string | undefined {
    for (const [logicalId, identity] of this.#identities) {
      if (identity.ref === physical || Object.values(identity.attributes).includes(physical))
        return logicalId;
    }
    return undefined;
  }

  #resolve(value: unknown, where: string): unknown {
    if (Array.isArray(value)) {
      return value.map((item) => this.#resolve(item, where)).filter((item) => item !== noValue);
    }
    if (!isObject(value)) return value;
    const keys = Object.keys(value);
    if (keys.length === 1) {
      const key = keys[0] as string;
      const argument = value[key];
      if (key === 'Ref') return this.#ref(String(argument), where);
      if (key === 'Condition') return this.#condition(String(argument), where);
      if (key.startsWith('Fn::')) return this.#function(key, argument, where);
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const resolved = this.#resolve(item, `${where}.${key}`);
      if (resolved !== noValue) out[key] = resolved;
    }
    return out;
  }

  #ref(name: string, where: string): unknown {
    const pseudo: Record<string, unknown> = {
      'AWS::Region': this.#env.region,
      'AWS::AccountId': this.#env.account,
      'AWS::Partition': this.#env.partition,
      'AWS::URLSuffix': this.#env.urlSuffix,
      'AWS::StackName': this.#env.stackName,
      'AWS::StackId': `arn:${this.#env.partition}:cloudformation:${this.#env.region}:${this.#env.account}:stack/${this.#env.stackName}/00000000-0000-0000-0000-000000000000`,
      'AWS::NotificationARNs': [],
      'AWS::NoValue': noValue,
    };
    if (name in pseudo) return pseudo[name];
    const identity = this.#identities.get(name);
    if (identity) return identity.ref;
    const parameter = this.#template.Parameters?.[name];
    if (parameter && parameter.Default !== undefined) return parameter.Default;
    throw new RehearsalProblem(
      'template',
      `${where}: Ref ${name} names no resource, and no parameter with a default`,
    );
  }

  #getAtt(argument: unknown, where: string): string {
    const [logicalId, attribute] = Array.isArray(argument)
      ? [String(argument[0]), String(this.#resolve(argument[1], where))]
      : String(argument).split(/\.(.*)/s);
    const identity = this.#identities.get(logicalId as string);
    const value = identity?.attributes[attribute as string];
    if (value === undefined) {
      const type = this.#template.Resources[logicalId as string]?.Type ?? 'no resource';
      throw new RehearsalProblem(
        'template',
        `${where}: Fn::GetAtt ${logicalId}.${attribute} (${type}) is not an attribute the rehearsal knows`,
      );
    }
    return value;
  }

  #function(name: string, argument: unknown, where: string): unknown {
    const args = Array.isArray(argument) ? argument : [argument];
    switch (name) {
      case 'Fn::GetAtt':
        return this.#getAtt(argument, where);
      case 'Fn::Join': {
        const [delimiter, items] = args;
        const list = this.#resolve(items, where) as unknown[];
        return list.map((item) => this.#scalar(item, where)).join(String(delimiter));
      }
      case 'Fn::Select': {
        const index = Number(this.#resolve(args[0], where));
        const list = this.#resolve(args[1], where) as unknown[];
        if (!Array.isArray(list) || index < 0 || index >= list.length)
          throw new RehearsalProblem('template', `${where}: Fn::Select index ${index} is out of range`);
        return list[index];
      }
      case 'Fn::Split':
        return this.#scalar(this.#resolve(args[1], where), where).split(String(args[0]));
      case 'Fn::Sub':
        return this.#sub(args[0], (args[1] ?? {}) as Record<string, unknown>, where);
      case 'Fn::Base64':
        return Buffer.from(this.#scalar(this.#resolve(args[0], where), where)).toString('base64');
      case 'Fn::FindInMap': {
        const [map, top, second] = args.map((arg) => this.#scalar(this.#resolve(arg, where), where));
        const found = this.#template.Mappings?.[map as string]?.[top as string]?.[second as string];
        if (found === undefined)
          throw new RehearsalProblem(
            'template',
            `${where}: Fn::FindInMap ${map}.${top}.${second} is not in Mappings`,
          );
        return found;
      }
      case 'Fn::If': {
        const [condition, whenTrue, whenFalse] = args;
        return this.#condition(String(condition), where)
          ? this.#resolve(whenTrue, where)
          : this.#resolve(whenFalse, where);
      }
      case 'Fn::Equals':
        return (
          JSON.stringify(this.#resolve(args[0], where)) === JSON.stringify(this.#resolve(args[1], where))
        );
      case 'Fn::And':
        return args.every((arg) => this.#resolve(arg, where) === true);
      case 'Fn::Or':
        return args.some((arg) => this.#resolve(arg, where) === true);
      case 'Fn::Not':
        return this.#resolve(args[0], where) !== true;
      default:
        throw new RehearsalProblem(
          'template',
          `${where}: ${name} is not an intrinsic function the rehearsal resolves`,
        );
    }
  }

  #condition(name: string, where: string): boolean {
    const definition = this.#template.Conditions?.[name];
    if (definition === undefined)
      throw new RehearsalProblem('template', `${where}: condition ${name} is not in Conditions`);
    return this.#resolve(definition, `Conditions.${name}`) === true;
  }

  #sub(text: unknown, variables: Record<string, unknown>, where: string): string {
    return String(text).replace(/\$\{([^}]+)\}/g, (_match, name: string) => {
      if (name.startsWith('!')) return `\${${name.slice(1)}}`;
      if (name in variables) return this.#scalar(this.#resolve(variables[name], where), where);
      if (name.includes('.') && !name.startsWith('AWS::')) return this.#getAtt(name, where);
      return this.#scalar(this.#ref(name, where), where);
    });
  }

  #scalar(value: unknown, where: string): string {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      return String(value);
    throw new RehearsalProblem('template', `${where}: expected a string, found ${JSON.stringify(value)}`);
  }
}
