// The documentation stands on its own: no tracked file cites material that
// lives outside the repository (the `../shared` folder the project was
// written from, or its design, style and reference notes as if they were
// here), and every relative link of the Markdown files resolves to a file of
// the repository, and to a heading of it when the link names one.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import t from "tap";

const root = join(import.meta.dirname, "..");

// Files a branch links before another branch adds them (empty when every
// branch has landed): linked already, so the docs need no second pass.
const notYetWritten = new Set<string>([]);

function trackedFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    .split("\0")
    .filter((f) => f !== "" && existsSync(join(root, f)));
}

/** Names of outside notes: spelled in pieces so this file does not cite them itself. */
const outsideNotes = ["DESIGN", "STYLE", "REFERENCE"].map((n) => `${n}.md`);
const sharedFolder = ["..", "shared"].join("/");

/** Where a text cites outside material: `../shared`, or a note the repository does not contain. */
export function outsideCitations(text: string, exists: (name: string) => boolean): string[] {
  const found: string[] = [];
  if (text.includes(sharedFolder)) found.push(sharedFolder);
  for (const note of outsideNotes) if (text.includes(note) && !exists(note)) found.push(note);
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (!heading?.[1]) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The relative link targets of a Markdown text, outside code blocks and code spans. */
export function relativeLinks(markdown: string): string[] {
  const links: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, "");
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      links.push(target);
    }
  }
  return links;
}

t.test("the helpers: citations, slugs, links", async (t) => {
  t.same(outsideCitations(`see ${sharedFolder}/x`, () => false), [sharedFolder]);
  t.same(outsideCitations(`see ${outsideNotes[0]} §4`, () => false), [outsideNotes[0]]);
  t.same(outsideCitations(`see ${outsideNotes[0]} §4`, () => true), [], "a note the repository holds may be cited");
  t.equal(slug("Routing (`routing_strategy`)"), "routing-routing_strategy");
  t.equal(slug("Usage, budgets and rate limits"), "usage-budgets-and-rate-limits");
  t.same(relativeLinks("[a](b.md) [c](https://x) `[d](e.md)` [f](#g)\n```\n[h](i.md)\n```"), ["b.md", "#g"]);
});

t.test("no tracked file cites material outside the repository", async (t) => {
  const files = trackedFiles();
  t.ok(files.length > 100, "git lists the tracked files");
  const exists = (name: string) => files.some((f) => f === name || f.endsWith(`/${name}`));
  const offenders: string[] = [];
  for (const file of files) {
    if (file === "test/docs-links.test.ts") continue;
    let text: string;
    try {
      text = readFileSync(join(root, file), "utf8");
    } catch {
      continue;
    }
    for (const citation of outsideCitations(text, exists)) offenders.push(`${file}: ${citation}`);
  }
  t.same(offenders, [], "files citing material outside the repository");
});

t.test("every relative link of the Markdown files resolves", async (t) => {
  const markdown = trackedFiles().filter((f) => f.endsWith(".md"));
  t.ok(markdown.includes("README.md") && markdown.includes("ARCHITECTURE.md"), "README.md and ARCHITECTURE.md are checked");
  t.ok(markdown.some((f) => f.startsWith("docs/")), "docs/ is checked");
  const broken: string[] = [];
  for (const file of markdown) {
    const text = readFileSync(join(root, file), "utf8");
    for (const link of relativeLinks(text)) {
      const [path = "", anchor] = link.split("#");
      const target = path === "" ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      const targetRel = relative(".", target).replace(/\/$/, "");
      if (notYetWritten.has(targetRel)) continue;
      if (!existsSync(join(root, target))) {
        broken.push(`${file}: ${link} (no such file)`);
        continue;
      }
      if (anchor !== undefined && target.endsWith(".md") && !anchorsOf(readFileSync(join(root, target), "utf8")).has(anchor)) {
        broken.push(`${file}: ${link} (no such heading)`);
      }
    }
  }
  t.same(broken, [], "broken relative links");
});
