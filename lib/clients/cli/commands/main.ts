import { quietWhenReaderCloses } from '../../common/closed-pipes.ts';
import { registerSigV4Signer } from '../command-context.ts';
import { meshProgram } from './program.ts';

/** `mesh` itself: what bin/mesh.ts starts once V8's compile cache is on. */
export async function runMesh(argv: readonly string[]): Promise<void> {
  quietWhenReaderCloses();
  registerSigV4Signer();
  const program = await meshProgram(argv);
  await program.parseAsync(argv as string[]);
}
