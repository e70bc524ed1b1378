// String rules written once for both readers of a zod schema: the server
// (zod parsing) and the OpenAPI document (z.toJSONSchema), which other regex
// engines and length counters then apply.
// - JSON Schema's minLength/maxLength count code points; JavaScript's .length
//   (and so z.string().max) counts UTF-16 units, an emoji being 2. `text()`
//   counts code points, so both agree on every string.
// - `\s` differs between engines (Python's includes \x1c-\x1f, not \ufeff), so
//   "not blank" spells out JavaScript's whitespace: what String#trim removes.
import { z } from "zod";

const whitespace = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff";
/** Matches a string with at least one character String#trim keeps. */
export const nonBlankPattern = new RegExp(`[^${whitespace}]`);

/** Code points in `s` (what JSON Schema's maxLength counts). */
export function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one code point in two units.
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n -= 1;
        i += 1;
      }
    }
  }
  return n;
}

export interface TextRules {
  min?: number;
  max: number;
  /** Refuse strings that are empty or whitespace only ("must not be blank"). */
  nonBlank?: boolean;
}

/** A string bounded in code points, optionally non-blank; documented as minLength/maxLength/pattern. */
export function text(rules: TextRules) {
  const { min = 0, max } = rules;
  let schema = z.string();
  if (rules.nonBlank) schema = schema.regex(nonBlankPattern, "must not be blank");
  // .length bounds code points from above and (halved) from below: the exact count only when needed.
  schema = schema.refine((s) => s.length <= max || codePoints(s) <= max, `must be at most ${max} characters`);
  if (min > 0) schema = schema.refine((s) => s.length >= 2 * min || codePoints(s) >= min, `must be at least ${min} characters`);
  return schema.meta(min > 0 ? { minLength: min, maxLength: max } : { maxLength: max });
}
