/** A benchmark's result: one table, printed for people, with the figures side by side. */
export type BenchTable = {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | number>>;
  readonly notes?: readonly string[];
};

export function formatTable(table: BenchTable): string {
  const cells = [table.columns.map(String), ...table.rows.map((row) => row.map(formatCell))];
  const widths = table.columns.map((_, column) =>
    Math.max(...cells.map((row) => (row[column] ?? '').length)),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ');
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [
    table.title,
    line(cells[0] ?? []),
    rule,
    ...cells.slice(1).map(line),
    ...(table.notes ?? []).map((note) => `  ${note}`),
    '',
  ].join('\n');
}

function formatCell(cell: string | number): string {
  if (typeof cell === 'string') return cell;
  if (Number.isInteger(cell)) return String(cell);
  return Math.abs(cell) >= 100 ? cell.toFixed(0) : Math.abs(cell) >= 1 ? cell.toFixed(2) : cell.toFixed(3);
}
