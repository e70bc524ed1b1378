// The simulated provider: always available, the default when no provider key
// is set, and the load testers' upstream. One adapter object grows a method
// per category with the same rules: deterministic, derived from the input,
// paced by `latencyMs` (video: ready `video.delayMs` after submission).
import { tmpdir } from "node:os";
import { join } from "node:path";
import { int, optionalString } from "../../core/env.ts";
import type { ChatRequest } from "../chat-request.ts";
import { defineProvider } from "../descriptor.ts";
import type { CallOptions, ChatCallOptions, EmbedRequest, ProviderAdapter } from "../types.ts";
import { sleep } from "../deadline.ts";
import { simulatedChat, simulatedChatStream, type SimulatedTiming } from "./chat.ts";
import { simulatedEmbed } from "./embed.ts";
import { simulatedImages } from "./images.ts";
import { simulatedSpeech } from "./speech.ts";
import { simulatedTranscribe } from "./transcribe.ts";
import { createSimulatedVideo, type SimulatedVideoOptions } from "./video.ts";

export interface SimulatedOptions {
  latencyMs?: number;
  tokensPerSecond?: number;
  /** Video clips: ready this long after submission, rendered into this cache directory. Absent: no simulated video. */
  video?: SimulatedVideoOptions | undefined;
}

export function createSimulatedAdapter(opts: SimulatedOptions = {}): ProviderAdapter {
  const provider = "simulated";
  const timing: SimulatedTiming = { latencyMs: opts.latencyMs ?? 0, tokensPerSecond: opts.tokensPerSecond ?? 0 };
  return {
    provider,
    chat: (req: ChatRequest, o: ChatCallOptions) => simulatedChat(provider, timing, req, o),
    chatStream: (req: ChatRequest, o: ChatCallOptions) => simulatedChatStream(provider, timing, req, o),
    embed: async (req: EmbedRequest, o: CallOptions) => {
      await sleep(timing.latencyMs, o.signal);
      return simulatedEmbed(provider, req);
    },
    speech: async (req, o) => {
      await sleep(timing.latencyMs, o.signal);
      return simulatedSpeech(req);
    },
    transcribe: async (req, o) => {
      await sleep(timing.latencyMs, o.signal);
      return simulatedTranscribe(req);
    },
    generateImages: async (req, o) => {
      await sleep(timing.latencyMs, o.signal);
      return simulatedImages(req);
    },
    ...(opts.video ? { video: createSimulatedVideo(opts.video) } : {}),
  };
}

/** Shared by the replicas of one machine, so a clip one rendered is not rendered again. */
export const defaultSimulatedVideoDir = join(tmpdir(), "troupe-simulated-video");

/** Always on: it needs no key (createAdapters adds it whatever the settings). */
export const descriptor = defineProvider({
  name: "simulated",
  title: "simulated",
  key: "simulated",
  env: {
    SIMULATED_LATENCY_MS: int(0, 600_000).default(0),
    /** 0 streams the whole simulated answer at once. */
    SIMULATED_TOKENS_PER_SECOND: int(0, 1_000_000).default(0),
    /** The simulated video provider's clip is ready this long after submission. */
    SIMULATED_VIDEO_DELAY_MS: int(0, 600_000).default(2_000),
    /** Where the simulated video provider caches rendered clips; default: <os temp dir>/troupe-simulated-video. */
    SIMULATED_VIDEO_DIR: optionalString,
  },
  secretEnv: [],
  settings: (e) => ({
    latencyMs: e.SIMULATED_LATENCY_MS,
    tokensPerSecond: e.SIMULATED_TOKENS_PER_SECOND,
    video: { delayMs: e.SIMULATED_VIDEO_DELAY_MS, cacheDir: e.SIMULATED_VIDEO_DIR ?? defaultSimulatedVideoDir },
  }),
  create: (s) => [createSimulatedAdapter(s)],
});
