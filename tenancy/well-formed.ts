// Credentials must be well-formed Unicode. A lone surrogate has no UTF-8
// encoding: hashing turns it into U+FFFD, so "\ud800"×10 and "\udfff"×10
// were one and the same password. Such strings are refused, naming the field.
import { invalidRequest } from "../core/errors.ts";

// In a /u regex a valid surrogate pair is one code point, so \p{Cs} matches
// only lone surrogates (the same test as String.prototype.isWellFormed).
const loneSurrogate = /\p{Cs}/u;

export function requireWellFormed(fields: Record<string, string | undefined>): void {
  const issues = Object.entries(fields)
    .filter(([, value]) => value !== undefined && loneSurrogate.test(value))
    // Every caller checks fields of a request body: named as the gateway's validation names them.
    .map(([name]) => ({ path: `body.${name}`, message: "is not well-formed Unicode (contains a lone surrogate)" }));
  if (issues.length > 0) throw invalidRequest(issues);
}
