/**
 * The ports one area of Mesh offers another. Each area keeps its own ports beside its core;
 * only what crosses areas is here, so the areas can be built and tested apart.
 */

/** What `push` is asked to do: a named node, or everything behind (`--behind`, `--full` to audit). */
export type PushRequest = {
  readonly node?: string;
  readonly behind?: boolean;
  readonly full?: boolean;
  readonly maxRounds?: number;
};

/** The brief's push contract; `behind` lists what is still behind when the bound is hit. */
export type PushOutcome = {
  readonly pushed: { readonly node: string; readonly revision: number } | null;
  readonly flushed: ReadonlyArray<{
    readonly node: string;
    readonly revision: number;
    readonly round: number;
  }>;
  readonly rounds: number;
  readonly behind: readonly string[];
};

/** Runs the push flow: on Step Functions Express when deployed, from the same ASL in-process locally. */
export interface PushFlow {
  push(request: PushRequest): Promise<PushOutcome>;
}

/** Sets a module's current version, marking every node that carries it as possibly behind. */
export interface ModuleVersions {
  setModuleVersion(module: string, version: string): Promise<{ readonly carriers: readonly string[] }>;
}

/** What a host fetches: the declaration a node was last sent. */
export type Delivery = {
  readonly node: string;
  readonly revision: number;
  readonly digest: string;
  /** Quoted strong ETag for If-None-Match. */
  readonly etag: string;
  readonly sentAt: string;
  readonly declaration: unknown;
};

export interface DeliveryReader {
  readDelivery(node: string): Promise<Delivery | undefined>;
}
