// Simulated images: real PNGs of the requested size, a gradient whose
// colours derive from the prompt and the image's index (deterministic).
import { encodePng } from "../../media/png.ts";
import type { ImageGenerationRequest, ProviderImage } from "../media-types.ts";
import { fnv1a } from "./hash.ts";

export function simulatedImages(req: ImageGenerationRequest): ProviderImage[] {
  return Array.from({ length: req.n }, (_, i) => {
    const h = fnv1a(`${req.prompt}#${i}`);
    const [r0, g0, b0] = [h & 255, (h >>> 8) & 255, (h >>> 16) & 255];
    const bytes = encodePng(req.width, req.height, (x, y) => [
      (r0 + Math.floor((x * 255) / req.width)) & 255,
      (g0 + Math.floor((y * 255) / req.height)) & 255,
      b0,
    ]);
    return { kind: "bytes", bytes, contentType: "image/png" };
  });
}
