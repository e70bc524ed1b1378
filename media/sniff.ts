// What a caller's bytes are, by their magic numbers, before any decoder sees
// them. ffmpeg guesses a format from the content: an HLS playlist uploaded
// as `image/png` was opened as a playlist, and its error text told an
// existing server file from a missing one. So an upload is refused unless
// its first bytes are one of the formats its field takes, and ffmpeg is
// then told that format (ffmpegInput) instead of guessing.

export type ImageFormat = "png" | "jpeg" | "webp" | "gif";
export type AudioFormat = "wav" | "mp3" | "flac" | "ogg" | "mp4" | "webm";

const ascii = (bytes: Uint8Array, at: number, text: string) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1", at, at + text.length) === text;

/** The image format of `bytes`, or undefined when it is none of PNG, JPEG, WebP, GIF. */
export function sniffImage(bytes: Uint8Array): ImageFormat | undefined {
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(bytes, 1, "PNG\r\n\x1a\n")) return "png";
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg";
  if (bytes.length >= 12 && ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WEBP")) return "webp";
  if (bytes.length >= 6 && (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a"))) return "gif";
  return undefined;
}

/** The audio container of `bytes`, or undefined when it is none that transcription takes. */
export function sniffAudio(bytes: Uint8Array): AudioFormat | undefined {
  if (bytes.length >= 12 && ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WAVE")) return "wav";
  if (bytes.length >= 4 && ascii(bytes, 0, "fLaC")) return "flac";
  if (bytes.length >= 4 && ascii(bytes, 0, "OggS")) return "ogg";
  if (bytes.length >= 8 && ascii(bytes, 4, "ftyp")) return "mp4";
  if (bytes.length >= 4 && bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return "webm";
  // MP3: an ID3v2 tag, or an MPEG audio frame header (11 sync bits, layer bits not 00).
  if (bytes.length >= 3 && ascii(bytes, 0, "ID3")) return "mp3";
  if (bytes.length >= 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0 && ((bytes[1] ?? 0) & 0x06) !== 0) return "mp3";
  return undefined;
}

/** ffmpeg's demuxer for each format: named, never guessed. */
const imageDemuxer: Record<ImageFormat, string> = { png: "png_pipe", jpeg: "jpeg_pipe", webp: "webp_pipe", gif: "gif" };
const audioDemuxer: Record<AudioFormat, string> = { wav: "wav", mp3: "mp3", flac: "flac", ogg: "ogg", mp4: "mov", webm: "matroska" };

/**
 * The input options for a caller's file: only the file protocol (no URL, no
 * pipe to another program) and the demuxer its magic numbers named, so no
 * input can name another file or URL (a playlist is never read as one).
 */
export function ffmpegInput(path: string, format: { image: ImageFormat } | { audio: AudioFormat }): string[] {
  const demuxer = "image" in format ? imageDemuxer[format.image] : audioDemuxer[format.audio];
  return ["-protocol_whitelist", "file", "-f", demuxer, "-i", path];
}
