// The programs media work runs (ffmpeg and ffprobe, media/ffmpeg.ts) and
// what cannot be done without them, found once at start: a server without
// ffmpeg says so in /readyz and its start-up log, and a request that needs it
// is refused at once with 503 capability_unavailable naming the program —
// rather than a video job that sits `processing` while its polls fail
// (docs/api/README.md, "Health and readiness"). The lookup is the one
// execFile makes (a file of that name on PATH that may be executed), read
// from the directories without spawning anything, so it costs start-up a few
// stat calls, not a process.
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { TroupeError } from "../core/errors.ts";

export const mediaTools = ["ffmpeg", "ffprobe"] as const;
export type MediaTool = (typeof mediaTools)[number];

/**
 * Each capability that needs a tool: what it needs and what a caller loses
 * without it. The list /readyz, the start-up log and the refusals read.
 */
export const toolCapabilities = {
  video: {
    needs: ["ffmpeg", "ffprobe"],
    affects:
      "video jobs (POST /v1/video/generate, POST /openai/v1/videos, the agents' generate_video tool): every job's clips are joined and narrated with ffmpeg, and the simulated provider renders its clips with it",
  },
  speech_conversion: {
    needs: ["ffmpeg"],
    affects: "POST /openai/v1/audio/speech in a response_format other than the one the provider makes (the simulated provider makes WAV, OpenAI and ElevenLabs MP3)",
  },
  audio_duration_probe: {
    needs: ["ffprobe"],
    affects: "pricing a transcription of audio that is not WAV when its provider reports no duration: it is billed 0 seconds",
  },
} as const satisfies Record<string, { needs: readonly MediaTool[]; affects: string }>;
export type ToolCapability = keyof typeof toolCapabilities;

/** A capability this server cannot serve, as /readyz lists it. */
export interface UnavailableCapability {
  capability: ToolCapability;
  /** The tools it needs that are not installed. */
  missing: MediaTool[];
  reason: string;
  affects: string;
}

/** The tools of `tools` found on `pathEnv` (PATH's format), each as the file execFile would run. */
export async function findTools(pathEnv: string | undefined, tools: readonly MediaTool[] = mediaTools): Promise<Set<MediaTool>> {
  const dirs = (pathEnv ?? "").split(delimiter).filter((d) => d !== "");
  const found = await Promise.all(tools.map(async (tool) => ((await firstExecutable(dirs, tool)) ? tool : undefined)));
  return new Set(found.filter((t): t is MediaTool => t !== undefined));
}

async function firstExecutable(dirs: readonly string[], name: string): Promise<boolean> {
  for (const dir of dirs) {
    try {
      await access(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this directory, or not executable: execFile would go on too
    }
  }
  return false;
}

/** "ffmpeg is not installed (not found on PATH)", "ffmpeg and ffprobe are …". */
function notInstalled(tools: readonly MediaTool[]): string {
  const names = tools.length === 1 ? tools[0]! : `${tools.slice(0, -1).join(", ")} and ${tools.at(-1)!}`;
  return `${names} ${tools.length === 1 ? "is" : "are"} not installed (not found on PATH)`;
}

/** What this server can do with the tools it has. */
export class Capabilities {
  readonly installed: ReadonlySet<MediaTool>;
  readonly unavailable: readonly UnavailableCapability[];

  constructor(installed: Iterable<MediaTool>) {
    this.installed = new Set(installed);
    const unavailable: UnavailableCapability[] = [];
    for (const [capability, { needs, affects }] of Object.entries(toolCapabilities) as [ToolCapability, (typeof toolCapabilities)[ToolCapability]][]) {
      const missing = needs.filter((tool) => !this.installed.has(tool));
      if (missing.length === 0) continue;
      unavailable.push({ capability, missing, reason: notInstalled(missing), affects });
    }
    this.unavailable = Object.freeze(unavailable);
  }

  /** Looks the tools up on `pathEnv` (default: this process's PATH, which execFile searches). */
  static async detect(pathEnv: string | undefined = process.env["PATH"]): Promise<Capabilities> {
    return new Capabilities(await findTools(pathEnv));
  }

  /** One line naming what is missing and what is unavailable for it (the start-up log's message). */
  summary(): string {
    const missing = mediaTools.filter((tool) => !this.installed.has(tool));
    return `${notInstalled(missing)}; unavailable on this server: ${this.unavailable.map((u) => u.capability).join(", ")} (see /readyz)`;
  }

  /** Why `capability` cannot run here, or undefined when it can. */
  missing(capability: ToolCapability): UnavailableCapability | undefined {
    return this.unavailable.find((u) => u.capability === capability);
  }

  /**
   * Throws 503 capability_unavailable when `capability` cannot run here: the
   * server's configuration, not the request, is at fault, and retrying does
   * not install anything.
   */
  require(capability: ToolCapability, what: string): void {
    const gap = this.missing(capability);
    if (!gap) return;
    throw new TroupeError("capability_unavailable", `${what} is unavailable on this server: ${gap.reason}; install ffmpeg (which provides ffprobe) and restart Troupe`, {
      details: { capability, missing: gap.missing },
    });
  }
}
