// Comments and docs stand on their own: a reader of the repository alone can
// follow every one. Two things are refused:
//   - an issue tracker's numbering (the word issue or wave followed by a
//     number, or a bare hash and number): the tracker is not part of the
//     repository, so a comment or doc says the rule or the decision itself
//     instead (the helpers' test below shows the forms). An upstream bug
//     named with its repository (`owner/repo#123`) is a public address and
//     stays allowed;
//   - a repository path (`gateway/app.ts`, `docs/benchmarks.md`,
//     `scripts/fuzz.sh`, or a bare `usage-recorder.ts`) that names no file:
//     a comment pointing at a file that was renamed or never written.
// What is read: the comments of TypeScript and Go sources (`//` and `/* */`,
// found by a small lexer that steps over strings, template literals and
// regular expressions, so a URL or a path inside a string is not a comment),
// the `#` comments of shell scripts, YAML, Python, the Containerfile and the
// ignore files, and the whole text of every Markdown file (docs are prose,
// and their code blocks name real commands and files too). Each tracked file
// is read once.
// Exclusions: `client/src/schema.d.ts` (generated from the OpenAPI document,
// its comments are the routes' summaries); JSON, lock files, binary fixtures
// and Helm templates (no comments to speak of); URLs and host-qualified
// addresses (`github.com/owner/repo/file.go`), which name files of other
// repositories; and paths under `node_modules/` or other folders that are on
// disk but not tracked, which resolve on disk like any other path.
// This file is scanned like any other: its comments describe the forms in
// words, and the examples live in the helpers' test strings.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, normalize } from "node:path";
import t from "tap";

const root = join(import.meta.dirname, "..");

/** Generated files whose comments are not written by hand. */
const generated = new Set(["client/src/schema.d.ts"]);

/**
 * Paths named on purpose that are not the repository's: a file Troupe
 * writes under TROUPE_DATA_DIR, and the file of the upstream dapr module
 * that dapr/build.sh blanks in its build copy.
 */
const outsideFiles = new Set(["vectors/meta.json", "cmd/daprd/components/zz_notag.go"]);

export interface Comment {
  text: string;
  line: number;
}

/** Line numbers of offsets given in increasing order, counting once through the text. */
function lineCounter(src: string): (offset: number) => number {
  let at = 0;
  let line = 1;
  return (offset) => {
    for (; at < offset; at++) if (src.charCodeAt(at) === 10) line++;
    return line;
  };
}

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\w$]/.test(c);

/** After these words a `/` starts a regular expression, not a division. */
const regexAfterWord = new Set(["return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await"]);

/**
 * The `//` and `/* *\/` comments of a TypeScript (or Go: `templates` false,
 * backticks are raw strings) source. Strings, template literals (with their
 * `${}` code) and regular expressions are stepped over; a `/` is a regular
 * expression where a value cannot end before it.
 */
export function slashComments(src: string, templates = true): Comment[] {
  const found: { text: string; at: number }[] = [];
  const n = src.length;
  let i = 0;
  let valueEnded = false; // the previous token ends a value: a `/` is a division
  let braces = 0;
  const templateBraces: number[] = []; // brace depth at each open `${`

  const skipQuoted = (quote: string): void => {
    i++;
    while (i < n && src[i] !== quote && src[i] !== "\n") i += src[i] === "\\" ? 2 : 1;
    i++;
  };
  // Reads template text from i (just after "`" or "}") to its end or its next `${`.
  const templateText = (): void => {
    while (i < n) {
      const c = src[i];
      if (c === "\\") i += 2;
      else if (c === "`") {
        i++;
        valueEnded = true;
        return;
      } else if (c === "$" && src[i + 1] === "{") {
        i += 2;
        templateBraces.push(braces);
        braces++;
        valueEnded = false;
        return;
      } else i++;
    }
  };

  while (i < n) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (c === " " || c === "\t" || c === "\n" || c === "\r") i++;
    else if (c === "/" && next === "/") {
      const end = src.indexOf("\n", i);
      const stop = end === -1 ? n : end;
      found.push({ text: src.slice(i, stop), at: i });
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = src.indexOf("*/", i + 2);
      const stop = end === -1 ? n : end + 2;
      found.push({ text: src.slice(i, stop), at: i });
      i = stop;
    } else if (c === "/") {
      if (valueEnded) {
        i++;
        valueEnded = false;
        continue;
      }
      i++;
      let inClass = false;
      while (i < n && src[i] !== "\n") {
        const r = src[i];
        if (r === "\\") i++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
        i++;
      }
      i++;
      while (i < n && /[a-z]/i.test(src[i] as string)) i++;
      valueEnded = true;
    } else if (c === "'" || c === '"') {
      skipQuoted(c);
      valueEnded = true;
    } else if (c === "`") {
      i++;
      if (templates) templateText();
      else {
        const end = src.indexOf("`", i);
        i = end === -1 ? n : end + 1;
        valueEnded = true;
      }
    } else if (isWordChar(c)) {
      const start = i;
      while (i < n && isWordChar(src[i])) i++;
      valueEnded = !regexAfterWord.has(src.slice(start, i));
    } else if (c === "{") {
      braces++;
      i++;
      valueEnded = false;
    } else if (c === "}") {
      braces--;
      i++;
      if (templateBraces.length > 0 && templateBraces[templateBraces.length - 1] === braces) {
        templateBraces.pop();
        templateText();
      } else valueEnded = true;
    } else if (c === "!" && valueEnded && next !== "=") {
      i++; // TypeScript's non-null assertion (`x! / y`): still a value
    } else {
      valueEnded = c === ")" || c === "]";
      i++;
    }
  }
  const lineAt = lineCounter(src);
  return found.map((f) => ({ text: f.text, line: lineAt(f.at) }));
}

/** The `#` comments of a shell script, YAML, Python or Containerfile: a `#` at a line's start or after a blank, outside quotes. */
export function hashComments(src: string): Comment[] {
  const found: Comment[] = [];
  src.split("\n").forEach((line, index) => {
    let quote: string | undefined;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quote) {
        if (c === "\\" && quote === '"') i++;
        else if (c === quote) quote = undefined;
      } else if (c === "'" || c === '"') quote = c;
      else if (c === "#" && (i === 0 || /\s/.test(line[i - 1] as string))) {
        found.push({ text: line.slice(i), line: index + 1 });
        return;
      }
    }
  });
  return found;
}

/** Issue-tracker numbering in a text: issue or wave and a number, or a bare hash and number (forms in the helpers' test). */
export function issueCitations(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\bissues? ?#?\d+|\bwave \d+|(?<![\w/.(#-])#\d+\b/gi)) found.push(m[0]);
  return found;
}

const extensions = "ts|mts|mjs|cjs|js|json|md|sh|ya?ml|go|py|toml|tpl|txt";
/** `dir/file.ext` (one folder at least), optionally `./` or `../` first. */
const pathPattern = new RegExp(`(?<![\\w.@/*<>$~{}-])((?:\\.{1,2}/)*(?:[\\w@-][\\w.@-]*/)+[\\w-][\\w.-]*\\.(?:${extensions}))(?![\\w/-])`, "g");
/** A bare file name of the repository's own kinds (not `.js`: `uWebSockets.js`, `Node.js` name packages). */
const barePattern = /(?<![\w.@/*<>$~{}-])(\w[\w.-]*\.(?:ts|md|sh))(?![\w/(-])/g;
/** URLs and host-qualified addresses name other repositories' files. */
const addresses = /\b[a-z][\w+.-]*:\/\/\S*|\b(?:[\w-]+\.)+(?:com|org|io|dev|net|sh|land)\/\S*/gi;

/** The repository paths a text mentions: a folder, a slash and a file name, or a bare name ending .ts, .md or .sh; URLs left out. */
export function pathMentions(text: string): string[] {
  // A shell brace list names each of its files (the helpers' test has one).
  const prose = text.replace(addresses, " ").replace(/([^\s`'"(]*)\{([\w.-]+(?:,[\w.-]+)+)\}([^\s`'")]*)/g, (_, head: string, list: string, tail: string) =>
    list
      .split(",")
      .map((item) => `${head}${item}${tail}`)
      .join(" "),
  );
  const found: string[] = [];
  for (const m of prose.matchAll(pathPattern)) found.push(m[1] as string);
  for (const m of prose.matchAll(barePattern)) found.push(m[1] as string);
  return found;
}

/** Resolves a mentioned path from `file`: to the repository root, the file's folder, the tail of a tracked path, or (bare) a tracked file's name. */
export function resolves(mention: string, file: string, tracked: { paths: Set<string>; names: Set<string>; tails: Set<string> }): boolean {
  if (outsideFiles.has(mention)) return true;
  if (!mention.includes("/")) return tracked.names.has(mention) || existsSync(join(root, dirname(file), mention));
  const fromHere = normalize(join(dirname(file), mention));
  if (tracked.paths.has(fromHere) || existsSync(join(root, fromHere))) return true;
  if (mention.startsWith(".")) return false;
  return tracked.paths.has(mention) || tracked.tails.has(mention) || existsSync(join(root, mention));
}

type Kind = "slash" | "go" | "hash" | "markdown";

function kindOf(file: string, text: () => string): Kind | undefined {
  if (generated.has(file)) return undefined;
  if (file.endsWith(".ts")) return "slash";
  if (file.endsWith(".go")) return "go";
  if (file.endsWith(".md")) return "markdown";
  if (/\.(sh|ya?ml|py|toml)$/.test(file) || /(^|\/)(Containerfile|\.\w+ignore|\.taprc)$/.test(file)) return "hash";
  if (!/\.[\w]+$/.test(basename(file)) && /^#!.*\b(ba)?sh\b/.test(text())) return "hash";
  return undefined;
}

function commentsOf(kind: Kind, text: string): Comment[] {
  if (kind === "slash") return slashComments(text);
  if (kind === "go") return slashComments(text, false);
  if (kind === "hash") return hashComments(text);
  return text.split("\n").map((line, index) => ({ text: line, line: index + 1 }));
}

t.test("the helpers: comments, issue numbers, paths", async (t) => {
  const src = [
    'const url = "https://example.com/x.ts"; // a comment',
    "const re = /\\/\\/ not a comment/; const half = a / b / c;",
    "const tpl = `text ${ { a: 1 }.a } // still text`; /* block",
    "   comment */ const s = '//';",
    "if (x) return /[/]/.test(y) && a! / b! / c; // last",
  ].join("\n");
  t.same(
    slashComments(src).map((c) => [c.line, c.text]),
    [
      [1, "// a comment"],
      [3, "/* block\n   comment */"],
      [5, "// last"],
    ],
  );
  t.same(slashComments("const raw = `// not a comment`; // one", false).map((c) => c.text), ["// one"]);
  t.same(
    hashComments('echo "#1" \'#2\' # three\n# four\nx=${v#1.}\n').map((c) => c.text),
    ["# three", "# four"],
  );
  t.same(issueCitations("see issue 11, Issue 27's P2, issues 14, #42 and wave 3"), ["issue 11", "Issue 27", "issues 14", "#42", "wave 3"]);
  t.same(issueCitations("dapr/dapr#10423, turn_1#0, [a](#issue-anchor), ${v#1.}"), []);
  t.same(pathMentions("see gateway/app.ts, `docs/x.md#a`, ../core/y.ts and app.ts; not https://h.io/a/b.ts or github.com/o/r/c.go"), [
    "gateway/app.ts",
    "docs/x.md",
    "../core/y.ts",
    "app.ts",
  ]);
  t.same(pathMentions("uWebSockets.js, Node.js, test/*.test.ts, actors/<name>/index.ts, $TROUPE_DATA_DIR/x/y.json"), []);
  t.same(pathMentions("`test/{a,b}-suite.test.ts`"), ["test/a-suite.test.ts", "test/b-suite.test.ts"]);
});

t.test("no comment or doc cites an issue number or a path that names no file", async (t) => {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    .split("\0")
    .filter((f) => f !== "" && existsSync(join(root, f)));
  const tracked = { paths: new Set(files), names: new Set(files.map((f) => basename(f))), tails: new Set<string>() };
  for (const f of files) {
    const parts = f.split("/");
    for (let i = 1; i < parts.length - 1; i++) tracked.tails.add(parts.slice(i).join("/"));
  }
  const citations: string[] = [];
  const missing: string[] = [];
  let read = 0;
  for (const file of files) {
    let text: string | undefined;
    const load = (): string => (text ??= readFileSync(join(root, file), "utf8"));
    const kind = kindOf(file, load);
    if (!kind) continue;
    read++;
    for (const comment of commentsOf(kind, load())) {
      for (const c of issueCitations(comment.text)) citations.push(`${file}:${comment.line}: ${c}`);
      for (const p of pathMentions(comment.text)) if (!resolves(p, file, tracked)) missing.push(`${file}:${comment.line}: ${p}`);
    }
  }
  t.ok(read > 600, `read the comments of ${read} files`);
  t.same(citations, [], "comments and docs citing an issue tracker's numbers");
  t.same(missing, [], "comments and docs naming a file the repository does not have");
});
