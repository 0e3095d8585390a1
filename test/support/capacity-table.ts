// The operation-costs table of docs/capacity.md, read by the tests that hold the code to it: in
// workerd (test/worker/capacity/operation-costs.test.ts) and on the runtime as deployed
// (test/node/storage-costs.test.ts).
import type { Costs } from "../worker/capacity/counting-bindings";

export const COST_COLUMNS: [keyof Costs, string][] = [
  ["d1Statements", "D1 statements"],
  ["d1RoundTrips", "D1 round trips"],
  ["d1RowsRead", "D1 rows read"],
  ["d1RowsWritten", "D1 rows written"],
  ["r2ClassA", "R2 class A"],
  ["r2ClassB", "R2 class B"],
  ["r2Free", "R2 free"],
  ["r2BytesIn", "R2 bytes in"],
  ["r2BytesOut", "R2 bytes out"],
  ["rateLimiterCalls", "RATE_LIMITER calls"],
  ["variantLockCalls", "VARIANT_LOCKS calls"],
  ["mediaContainerCalls", "MEDIA_CONTAINER calls"],
  ["fetches", "fetches"],
];

/** The doc's table: operation name, then a cell per column; a cell starting with "~" is not compared. */
export function documentedCosts(doc: string): Map<string, string[]> {
  const section = /<!-- operation-costs:start -->([\s\S]*?)<!-- operation-costs:end -->/.exec(doc)?.[1];
  if (!section) throw new Error("docs/capacity.md has no operation-costs table");
  const rows = section
    .split("\n")
    .filter((line) => line.startsWith("|"))
    .slice(2);
  return new Map(
    rows.map((line) => {
      const cells = line
        .split("|")
        .slice(1, -1)
        .map((cell) => cell.trim());
      return [cells[0]!, cells.slice(1)];
    }),
  );
}

/** Where `costs` differ from the doc's row `name`, in the columns given (all by default), one line each. */
export function costDifferences(
  documented: Map<string, string[]>,
  name: string,
  costs: Costs,
  columns: (keyof Costs)[] = COST_COLUMNS.map(([column]) => column),
): string[] {
  const cells = documented.get(name);
  if (!cells) return [`${name}: not in the doc`];
  return COST_COLUMNS.flatMap(([column, title], i) =>
    !columns.includes(column) || cells[i]?.startsWith("~") || cells[i] === String(costs[column])
      ? []
      : [`${name}, ${title}: doc ${cells[i]}, measured ${costs[column]}`],
  );
}
