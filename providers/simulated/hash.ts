// Small deterministic hashes for simulated outputs (ids, embeddings, words).
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const syllables = ["ka", "lo", "mi", "ten", "ra", "vo", "su", "ne", "pa", "dor", "li", "mex", "ta", "ri", "ban", "zo"];

/** n pseudo-words derived from seed text: the same seed always gives the same words. */
export function loremWords(seed: string, n: number): string {
  const words: string[] = [];
  let h = fnv1a(seed);
  for (let i = 0; i < n; i++) {
    h = fnv1a(String(i), h);
    const len = 1 + (h % 3);
    let w = "";
    for (let j = 0; j < len; j++) w += syllables[(h >>> (4 * j + 2)) % syllables.length];
    words.push(w);
  }
  return words.join(" ");
}
