// The simulated provider: always available, the default when no provider key
// is set, and the load testers' upstream. One adapter object grows a method
// per category with the same rules: deterministic, derived from the input,
// paced by `latencyMs` (video: ready `video.delayMs` after submission).
import type { ChatRequest } from "../chat-request.ts";
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
