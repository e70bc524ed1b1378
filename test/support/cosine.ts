// The exact reference the vector tests and the vector benchmark compare
// against: cosine distance in float64 over the float32 values an index stores.
export function exactCosineDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const fa = a instanceof Float32Array ? a : Float32Array.from(a as number[]);
  const fb = b instanceof Float32Array ? b : Float32Array.from(b as number[]);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < fa.length; i++) {
    dot += (fa[i] as number) * (fb[i] as number);
    na += (fa[i] as number) ** 2;
    nb += (fb[i] as number) ** 2;
  }
  return 1 - dot / Math.sqrt(na * nb);
}
