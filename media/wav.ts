// Minimal RIFF/WAVE support: encoding 16-bit PCM (the simulated provider's
// speech) and reading a WAV header's duration (transcription pricing without
// spawning ffprobe for the common case).

/** A 16-bit little-endian PCM mono WAV from samples in [-1, 1]. */
export function encodeWav(samples: Float32Array, sampleRate: number): Buffer {
  const dataBytes = samples.length * 2;
  const out = Buffer.alloc(44 + dataBytes);
  out.write("RIFF", 0, "ascii");
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write("WAVE", 8, "ascii");
  out.write("fmt ", 12, "ascii");
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(1, 22); // mono
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * 2, 28); // byte rate
  out.writeUInt16LE(2, 32); // block align
  out.writeUInt16LE(16, 34); // bits per sample
  out.write("data", 36, "ascii");
  out.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    out.writeInt16LE(Math.round(s * 32767), 44 + i * 2);
  }
  return out;
}

/** Seconds of audio in a PCM WAV, or undefined when the bytes are not one. */
export function wavDurationSeconds(bytes: Buffer): number | undefined {
  if (bytes.length < 12 || bytes.toString("ascii", 0, 4) !== "RIFF" || bytes.toString("ascii", 8, 12) !== "WAVE") return undefined;
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString("ascii", at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === "fmt " && at + 20 <= bytes.length) byteRate = bytes.readUInt32LE(at + 16);
    if (id === "data") {
      if (!byteRate) return undefined;
      // A streamed WAV may carry 0 or 0xFFFFFFFF here: count what is present instead.
      const present = Math.min(size, bytes.length - at - 8);
      return present / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return undefined;
}
