// docs/configuration.md documents every setting core/config.ts reads, and
// only those: each name in `settingNames` (the keys of the one env schema)
// has exactly one table row, and every table row names a real setting. A
// setting added to the schema without its row, or a row left behind after a
// setting was removed or renamed, fails here.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { settingNames } from "../../gateway/config.ts";

const docPath = join(import.meta.dirname, "../../docs/configuration.md");

/** The variable of every table row whose first cell is a backticked name: | `NAME` | … |. */
function documentedNames(markdown: string): string[] {
  const names: string[] = [];
  for (const line of markdown.split("\n")) {
    const row = /^\|\s*`([A-Za-z0-9_]+)`\s*\|/.exec(line);
    if (row?.[1] !== undefined) names.push(row[1]);
  }
  return names;
}

t.test("the row parser reads the first cell of table rows only", async (t) => {
  const sample = ["| Variable | Type |", "|---|---|", "| `PORT` | int |", "- `NOT_A_ROW` in a list", "| `HOST` | string |"].join("\n");
  t.same(documentedNames(sample), ["PORT", "HOST"]);
});

t.test("every setting core/config.ts reads has one row in docs/configuration.md", async (t) => {
  const documented = documentedNames(readFileSync(docPath, "utf8"));
  t.ok(settingNames.length > 0, "core/config.ts lists its settings");
  const missing = settingNames.filter((name) => !documented.includes(name));
  t.same(missing, [], "settings without a row in docs/configuration.md");
  const twice = documented.filter((name, i) => documented.indexOf(name) !== i);
  t.same(twice, [], "settings with more than one row");
});

t.test("every row of docs/configuration.md names a real setting", async (t) => {
  const documented = documentedNames(readFileSync(docPath, "utf8"));
  const invented = documented.filter((name) => !settingNames.includes(name));
  t.same(invented, [], "rows naming no setting of core/config.ts");
});
