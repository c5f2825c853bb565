import { Composer, type CST, type Document, type LineCounter, Parser, YAMLParseError } from 'yaml';

/**
 * The deepest a file may nest: its deepest field is 6 levels down (`nodes.web.modules.nginx.
 * consumes[0]`), so 32 is room for any way of writing one. The parser composes a document by
 * recursion, and a file nested 10,000 deep ran it out of stack (`Maximum call stack size
 * exceeded`, reported as a syntax error); the depth is measured first, on the parser's tokens,
 * without recursion.
 */
export const maxFileDepth = 32;

/** How deep a document's collections nest, walked with a stack of its own (no recursion). */
function depthOf(tokens: readonly CST.Token[]): { readonly depth: number; readonly offset: number } {
  let deepest = { depth: 0, offset: 0 };
  const stack: Array<{ token: CST.Token | undefined; depth: number }> = tokens.map((token) => ({
    token,
    depth: 0,
  }));
  while (stack.length > 0) {
    const { token, depth } = stack.pop() as { token: CST.Token | undefined; depth: number };
    if (!token) continue;
    if (token.type === 'document') {
      stack.push({ token: token.value, depth });
      continue;
    }
    if (!('items' in token) || !Array.isArray(token.items)) continue;
    const inside = depth + 1;
    if (inside > deepest.depth) deepest = { depth: inside, offset: token.offset };
    if (inside > maxFileDepth) return deepest;
    for (const item of token.items as Array<{ key?: CST.Token | null; value?: CST.Token }>) {
      if (item.key) stack.push({ token: item.key, depth: inside });
      if (item.value) stack.push({ token: item.value, depth: inside });
    }
  }
  return deepest;
}

/**
 * The file as one YAML document, as `parseDocument` reads it, when it nests no deeper than
 * `maxFileDepth`; else how deep it goes, and where.
 */
export function documentOf(
  text: string,
  lineCounter: LineCounter,
):
  | { readonly doc: Document.Parsed }
  | { readonly tooDeep: { readonly depth: number; readonly offset: number } } {
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const measured = depthOf(tokens);
  if (measured.depth > maxFileDepth) return { tooDeep: measured };
  const composer = new Composer({ uniqueKeys: false, prettyErrors: false });
  const docs = [...composer.compose(tokens, true, text.length)];
  const [doc, second] = docs as [Document.Parsed, Document.Parsed | undefined];
  if (second)
    doc.errors.push(
      new YAMLParseError(
        [second.range[0], second.range[1]],
        'MULTIPLE_DOCS',
        'the file holds more than one document (a line of ---): a mesh file is one',
      ),
    );
  return { doc };
}
