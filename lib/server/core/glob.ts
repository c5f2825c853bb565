/**
 * Glob patterns matched without backtracking: a `*` matches any run of the characters `star`
 * allows, `?` (when `question` is on) one character; the rest of a pattern is literal. A regular
 * expression built from a pattern (`a*a*a*b` as `^a.*a.*a.*b$`) backtracks: each star multiplies
 * the ways a failing text is tried, so a 300-byte mesh file stalled the control plane for seconds.
 * Here the pattern is cut at its stars; the first piece must start the text, the last must end
 * it, and each piece between is found at its leftmost place after the one before (the leftmost
 * place leaves the most text to the pieces after it, so no other place needs trying: when a star
 * may not stand for every character, a piece that could be placed further to cover one is made
 * of characters a star may stand for, by its own period). Each piece
 * without `?` is found with Knuth-Morris-Pratt, so a test costs O(text + pattern) whatever the
 * stars; a piece with `?` is found by trying each place, O(text × piece), for the patterns of our
 * own policies (bounded, and never a caller's).
 */
export type GlobOptions = {
  /** The characters a `*` may stand for. @default any */
  readonly star?: (char: string) => boolean;
  /**
   * Whether `?` is one character (IAM's and IoT's globs) or a literal; only where a star stands for
   * any character, since a `?` may cover one a star may not, and the leftmost place is then not
   * always the best. @default false
   */
  readonly question?: boolean;
};

/** Counts the characters compared, for the tests that hold the matcher to linear time. */
export type GlobMeter = { steps: number };

type Piece = { readonly text: string; readonly wild: boolean; readonly failure: Int32Array | undefined };

export type Glob = { test(text: string, meter?: GlobMeter): boolean };

export function glob(pattern: string, options: GlobOptions = {}): Glob {
  const question = options.question ?? false;
  const starAllows = options.star;
  if (question && starAllows) throw new Error('a glob takes ? only where its * may stand for any character');
  const pieces: Piece[] = pattern.split('*').map((text) => {
    const wild = question && text.includes('?');
    return { text, wild, failure: wild ? undefined : failureOf(text) };
  });
  const charMatches = (p: string, t: string) => p === t || (question && p === '?');

  /** Whether `piece` matches `text` exactly at `at`. */
  const matchesAt = (piece: Piece, text: string, at: number, meter: GlobMeter | undefined): boolean => {
    for (let i = 0; i < piece.text.length; i++) {
      if (meter) meter.steps += 1;
      if (!charMatches(piece.text[i] as string, text[at + i] as string)) return false;
    }
    return true;
  };

  /** The leftmost place in [from, to) where `piece` fits whole, or -1. */
  const find = (piece: Piece, text: string, from: number, to: number, meter: GlobMeter | undefined) => {
    const length = piece.text.length;
    if (piece.failure === undefined) {
      for (let at = from; at + length <= to; at++) if (matchesAt(piece, text, at, meter)) return at;
      return -1;
    }
    const failure = piece.failure;
    let matched = 0;
    for (let at = from; at < to; at++) {
      const char = text[at];
      while (matched > 0 && piece.text[matched] !== char) {
        if (meter) meter.steps += 1;
        matched = failure[matched - 1] as number;
      }
      if (meter) meter.steps += 1;
      if (piece.text[matched] === char) matched += 1;
      if (matched === length) return at - length + 1;
    }
    return -1;
  };

  return {
    test(text: string, meter?: GlobMeter): boolean {
      const first = pieces[0] as Piece;
      if (pieces.length === 1) return text.length === first.text.length && matchesAt(first, text, 0, meter);
      const last = pieces.at(-1) as Piece;
      const end = text.length - last.text.length;
      if (end < first.text.length) return false;
      if (!matchesAt(first, text, 0, meter) || !matchesAt(last, text, end, meter)) return false;
      // The first place at or after each position where a star may not stand: one pass.
      let starStops: Int32Array | undefined;
      if (starAllows) {
        starStops = new Int32Array(text.length + 1);
        starStops[text.length] = text.length;
        for (let at = text.length - 1; at >= 0; at--) {
          if (meter) meter.steps += 1;
          starStops[at] = starAllows(text[at] as string) ? (starStops[at + 1] as number) : at;
        }
      }
      const starFits = (from: number, to: number) =>
        starStops === undefined || (starStops[from] as number) >= to;
      let at = first.text.length;
      for (const piece of pieces.slice(1, -1)) {
        if (piece.text === '') continue;
        const found = find(piece, text, at, end, meter);
        // Past a character no star may stand for, no later place can do better.
        if (found < 0 || !starFits(at, found)) return false;
        at = found + piece.text.length;
      }
      return starFits(at, end);
    },
  };
}

/** Knuth-Morris-Pratt's failure table: for each prefix, the longest proper prefix that is also its suffix. */
function failureOf(piece: string): Int32Array {
  const failure = new Int32Array(piece.length);
  let k = 0;
  for (let i = 1; i < piece.length; i++) {
    while (k > 0 && piece[i] !== piece[k]) k = failure[k - 1] as number;
    if (piece[i] === piece[k]) k += 1;
    failure[i] = k;
  }
  return failure;
}
