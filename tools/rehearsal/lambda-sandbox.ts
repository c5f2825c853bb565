/**
 * One Lambda execution environment of the rehearsal: a fresh Node process that loads a bundle
 * from cdk.out the way the Node.js runtime does (LAMBDA_TASK_ROOT, _HANDLER) and runs one
 * invocation at a time, asked over IPC by tools/rehearsal/sandbox-pool.ts.
 *
 * Three things stand in for Lambda's runtime and AWS's network here, and nothing else is added:
 * - `@aws-sdk/*` imported by the bundle resolves from LAMBDA_RUNTIME_DIR (the project's
 *   node_modules, standing in for the SDK the runtime ships); any other package the bundle
 *   did not include fails to load, as it would on Lambda.
 * - names under `.localhost` resolve to the loopback (RFC 6761), so the SDK's host prefixes
 *   (`sync-` for StartSyncExecution) still reach the rehearsal's AWS endpoint.
 * - port 443 of names under `aws.localhost` (the IoT data endpoint, CloudFormation's response
 *   URLs, which clients take as bare hosts on 443) is the rehearsal's HTTPS listener, whose
 *   CA is trusted as the runtime trusts the public CAs AWS's certificates chain to.
 */
import dns from 'node:dns';
import { existsSync } from 'node:fs';
import { createRequire, isBuiltin, registerHooks } from 'node:module';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { pathToFileURL } from 'node:url';

export type SandboxRequest = {
  readonly type: 'invoke';
  readonly id: string;
  readonly event: unknown;
  readonly requestId: string;
  readonly deadlineMs: number;
};

export type LambdaError = {
  readonly errorType: string;
  readonly errorMessage: string;
  readonly trace?: string[];
};

export type SandboxMessage =
  | { readonly type: 'ready'; readonly initMs: number }
  | ({ readonly type: 'init-error' } & LambdaError)
  | { readonly type: 'result'; readonly id: string; readonly payload: unknown }
  | ({ readonly type: 'error'; readonly id: string } & LambdaError);

const send = (message: SandboxMessage) => process.send?.(message);

function asLambdaError(error: unknown, fallbackType = 'Error'): LambdaError {
  if (error instanceof Error)
    return {
      errorType: error.name || fallbackType,
      errorMessage: error.message,
      trace: error.stack?.split('\n') ?? [],
    };
  return { errorType: fallbackType, errorMessage: String(error) };
}

function resolveLocalhostToLoopback(): void {
  type Lookup = (hostname: string, options: unknown, callback?: unknown) => void;
  const original = dns.lookup as unknown as Lookup;
  const lookup: Lookup = (hostname, options, callback) => {
    if (!/(^|\.)localhost$/i.test(hostname)) return original(hostname, options, callback);
    const done = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    if (typeof options === 'object' && (options as { all?: boolean } | null)?.all)
      return void process.nextTick(done, null, [{ address: '127.0.0.1', family: 4 }]);
    process.nextTick(done, null, '127.0.0.1', 4);
  };
  (dns as unknown as { lookup: Lookup }).lookup = lookup;
}

function reachRehearsalHttps(port: number, caPem: string | undefined): void {
  if (caPem) tls.setDefaultCACertificates([...tls.getCACertificates('default'), caPem]);
  if (!port) return;
  type Connect = (this: net.Socket, ...args: unknown[]) => net.Socket;
  const original = net.Socket.prototype.connect as unknown as Connect;
  const connect: Connect = function connect(this: net.Socket, ...args) {
    // net.connect hands over its normalized arguments as an array, tls.connect its options
    const first = args[0];
    const options = (Array.isArray(first) ? first[0] : first) as { host?: string; port?: number } | null;
    if (options && typeof options === 'object' && Number(options.port) === 443)
      if (/(^|\.)aws\.localhost$/i.test(options.host ?? '')) options.port = port;
    return original.apply(this, args);
  };
  net.Socket.prototype.connect = connect as unknown as typeof net.Socket.prototype.connect;
}

function loadSdkFromRuntimeDir(taskRoot: string, runtimeDir: string): void {
  const taskRootUrl = `${pathToFileURL(taskRoot).href}/`;
  const runtimeUrl = `${pathToFileURL(runtimeDir).href}/`;
  const runtimeRequire = createRequire(runtimeUrl);
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const bare = !/^(\.|\/|[a-z]+:)/i.test(specifier) && !isBuiltin(specifier);
      if (!bare || !context.parentURL?.startsWith(taskRootUrl)) return nextResolve(specifier, context);
      if (specifier.startsWith('@aws-sdk/')) {
        // a require() resolves by CommonJS's own rules, from the runtime's folder too
        if (context.conditions?.includes('require'))
          return { url: pathToFileURL(runtimeRequire.resolve(specifier)).href, shortCircuit: true };
        return nextResolve(specifier, { ...context, parentURL: runtimeUrl });
      }
      const error = new Error(
        `Cannot find package '${specifier}' imported from ${context.parentURL}: the bundle left it out and the Lambda runtime does not provide it`,
      );
      throw Object.assign(error, { code: 'ERR_MODULE_NOT_FOUND' });
    },
  });
}

async function loadHandler(): Promise<(event: unknown, context: unknown) => unknown> {
  const taskRoot = process.env.LAMBDA_TASK_ROOT ?? '';
  const handlerString = process.env._HANDLER ?? '';
  const dot = handlerString.lastIndexOf('.');
  if (dot <= 0)
    throw Object.assign(new Error(`Bad handler ${handlerString}`), { name: 'Runtime.MalformedHandlerName' });
  const modulePath = handlerString.slice(0, dot);
  const exportName = handlerString.slice(dot + 1);
  const file = ['.js', '.mjs', '.cjs'].map((ext) => join(taskRoot, `${modulePath}${ext}`)).find(existsSync);
  if (!file) {
    throw Object.assign(
      new Error(`Cannot find module '${modulePath}' in ${taskRoot} (tried .js, .mjs, .cjs)`),
      {
        name: 'Runtime.ImportModuleError',
      },
    );
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw Object.assign(new Error(`${(error as Error).name}: ${(error as Error).message}`), {
      name: 'Runtime.ImportModuleError',
      cause: error,
    });
  }
  // a CommonJS bundle's exports are its module.exports, the namespace's default
  const handler = module[exportName] ?? (module.default as Record<string, unknown> | undefined)?.[exportName];
  if (typeof handler !== 'function')
    throw Object.assign(new Error(`${handlerString} is undefined or not exported`), {
      name: 'Runtime.HandlerNotFound',
    });
  return handler as (event: unknown, context: unknown) => unknown;
}

function contextFor(request: SandboxRequest) {
  const env = process.env;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: env._REHEARSAL_FUNCTION_ARN,
    memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: request.requestId,
    logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
    getRemainingTimeInMillis: () => Math.max(0, request.deadlineMs - Date.now()),
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  resolveLocalhostToLoopback();
  reachRehearsalHttps(Number(process.env._REHEARSAL_HTTPS_PORT ?? 0), process.env._REHEARSAL_CA_CERT);
  loadSdkFromRuntimeDir(process.env.LAMBDA_TASK_ROOT ?? '', process.env.LAMBDA_RUNTIME_DIR ?? '');
  let current: string | undefined;
  const crash = (error: unknown, type: string) => {
    if (current) send({ type: 'error', id: current, ...asLambdaError(error, type) });
    else process.stderr.write(`${type}: ${(error as Error)?.stack ?? String(error)}\n`);
    setImmediate(() => process.exit(129));
  };
  process.on('uncaughtException', (error) => crash(error, 'Runtime.UncaughtException'));
  process.on('unhandledRejection', (error) => crash(error, 'Runtime.UnhandledPromiseRejection'));

  let handler: (event: unknown, context: unknown) => unknown;
  try {
    handler = await loadHandler();
  } catch (error) {
    send({ type: 'init-error', ...asLambdaError(error, 'Runtime.ImportModuleError') });
    return;
  }
  process.on('message', async (request: SandboxRequest) => {
    current = request.id;
    process.env._X_AMZN_TRACE_ID = `Root=1-${Date.now().toString(16)}-${request.requestId.replaceAll('-', '').slice(0, 24)};Sampled=1`;
    try {
      const payload = await handler(request.event, contextFor(request));
      send({ type: 'result', id: request.id, payload: payload ?? null });
    } catch (error) {
      send({ type: 'error', id: request.id, ...asLambdaError(error) });
    } finally {
      current = undefined;
    }
  });
  send({ type: 'ready', initMs: Math.round(performance.now() - started) });
}

await main();
