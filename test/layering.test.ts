// The folders are layers and imports point down. ARCHITECTURE.md states the
// order once, as its `layers` block (bottom-up, one rank a line, peers on
// one line); this test reads that block, parses the imports of every tracked
// TypeScript file outside test/ and bench/ (tests and benchmarks import
// whatever they exercise), and fails naming each import that reaches a peer,
// a rank above, or a folder the block does not place. Imports are found by
// the TypeScript parser, not by pattern, so an import written in a comment or
// a string is not one, and a type-only import counts like any other: a type
// from a layer above still ties the layer to it.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import t from "tap";
import ts from "typescript";

const root = join(import.meta.dirname, "..");

/** Folders whose files are not read: they may import any layer. */
const unchecked = new Set(["test", "bench"]);

/** Rank of each folder (0 = bottom) from a Markdown page's ```layers block. */
export function parseLayerOrder(markdown: string): Map<string, number> {
  const block = /^```layers\n([\s\S]*?)^```$/m.exec(markdown);
  if (!block?.[1]) throw new Error("no ```layers block");
  const ranks = new Map<string, number>();
  block[1]
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .forEach((line, rank) => {
      for (const folder of line.split(/\s+/)) {
        if (ranks.has(folder)) throw new Error(`${folder} is placed twice in the layers block`);
        ranks.set(folder, rank);
      }
    });
  return ranks;
}

/** The module specifiers a source imports statically, re-exports from, or imports dynamically with a literal. */
export function importsOf(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: string[] = [];
  const literal = (node: ts.Node | undefined): void => {
    if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) literal(node.arguments[0]);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The folder a repository path is in; "" for a file at the top. */
const folderOf = (path: string): string => (path.includes("/") ? path.slice(0, path.indexOf("/")) : "");

/** One line per import of `files` (path → source) that does not point down the order. */
export function upwardImports(files: ReadonlyMap<string, string>, ranks: ReadonlyMap<string, number>): string[] {
  const found: string[] = [];
  for (const [path, source] of files) {
    const from = folderOf(path);
    const fromRank = ranks.get(from);
    if (fromRank === undefined) {
      found.push(`${path} is in ${from === "" ? "no folder" : `${from}/`}, which the layers block does not place`);
      continue;
    }
    for (const specifier of importsOf(path, source)) {
      if (!specifier.startsWith(".")) continue;
      const target = posix.normalize(posix.join(posix.dirname(path), specifier));
      const to = folderOf(target);
      if (to === from) continue;
      const toRank = ranks.get(to);
      const why =
        target.startsWith("../") ? "outside the repository"
        : toRank === undefined ? `${to === "" ? "the top folder" : `${to}/`} is not in the layers block`
        : toRank > fromRank ? `${to}/ is above ${from}/`
        : toRank === fromRank ? `${to}/ is a peer of ${from}/`
        : undefined;
      if (why !== undefined) found.push(`${path} imports ${target} (${why})`);
    }
  }
  return found;
}

t.test("the parser finds every form of import and nothing else", async (t) => {
  const source = [
    `import { a } from "./a.ts";`,
    `import type { B } from "../b/b.ts";`,
    `import "./side-effect.ts";`,
    `export * from "./c.ts";`,
    `export { d } from "./d.ts";`,
    `export type { E } from "./e.ts";`,
    `const f = await import("./f.ts");`,
    "const g = await import(`./g.ts`);",
    `type H = typeof import("./h.ts");`,
    `// import { x } from "./in-a-comment.ts";`,
    `const s = 'import { y } from "./in-a-string.ts"';`,
    `const dynamic = await import(name);`,
    `export const local = 1;`,
  ].join("\n");
  t.same(importsOf("x/sample.ts", source), ["./a.ts", "../b/b.ts", "./side-effect.ts", "./c.ts", "./d.ts", "./e.ts", "./f.ts", "./g.ts", "./h.ts"]);
});

t.test("an import up a rank, to a peer, or to an unplaced folder is named", async (t) => {
  const ranks = parseLayerOrder("Some prose.\n\n```layers\nbase\nleft right\ntop\n```\n");
  t.same([...ranks], [["base", 0], ["left", 1], ["right", 1], ["top", 2]]);
  const files = new Map([
    ["base/a.ts", `import { b } from "./b.ts";\nimport type { T } from "../top/t.ts";`],
    ["left/l.ts", `import { base } from "../base/a.ts";\nexport * from "../right/r.ts";`],
    ["right/r.ts", `const m = await import("../elsewhere/m.ts");\nimport { z } from "zod";`],
    ["top/t.ts", `import { l } from "../left/l.ts";\nimport { base } from "../base/sub/a.ts";\nimport { out } from "../../outside.ts";`],
    ["loose.ts", `export const x = 1;`],
  ]);
  t.same(upwardImports(files, ranks), [
    "base/a.ts imports top/t.ts (top/ is above base/)",
    "left/l.ts imports right/r.ts (right/ is a peer of left/)",
    "right/r.ts imports elsewhere/m.ts (elsewhere/ is not in the layers block)",
    "top/t.ts imports ../outside.ts (outside the repository)",
    "loose.ts is in no folder, which the layers block does not place",
  ]);
});

t.test("no tracked source imports up a layer (ARCHITECTURE.md's layers block)", async (t) => {
  const ranks = parseLayerOrder(readFileSync(join(root, "ARCHITECTURE.md"), "utf8"));
  for (const folder of ["core", "media", "vectors", "providers", "tenancy", "actors", "gateway", "load", "bench", "test"]) {
    t.ok(ranks.has(folder), `the layers block places ${folder}/`);
  }
  const files = new Map<string, string>();
  for (const path of execFileSync("git", ["ls-files", "-z", "--", "*.ts"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }).split("\0")) {
    if (path === "" || unchecked.has(folderOf(path)) || !existsSync(join(root, path))) continue;
    files.set(path, readFileSync(join(root, path), "utf8"));
  }
  t.ok(files.size > 100, `${files.size} files read`);
  const upward = upwardImports(files, ranks);
  // One failure per import, so the output lists them whole, one a line.
  for (const line of upward) t.fail(line);
  t.equal(upward.length, 0, "imports that do not point down the layers");
});
