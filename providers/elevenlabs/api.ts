// ElevenLabs endpoints and headers (xi-api-key). Voices are addressed by id
// upstream; the catalogue lists the premade voices by name and this table
// maps them (a name absent here is passed through as an id).
export interface ElevenLabsConfig {
  provider: string;
  baseUrl: string;
  apiKey: string;
}

export const premadeVoiceIds: Readonly<Record<string, string>> = {
  rachel: "21m00Tcm4TlvDq8ikWAM",
  adam: "pNInz6obpgDQGcFmaJgB",
  antoni: "ErXwobaYiN019PkySvjV",
  bella: "EXAVITQu4vr4xnSDxMaL",
  domi: "AZnzlk1XvdvUeBnXmlld",
  elli: "MF3mGyEYCl7XYWbV9V6O",
  josh: "TxGEd3B7mfFw5iFmT8Bk",
  arnold: "VR6AewLTigWG4xSOukaG",
  sam: "yoZ06aMxZJJ28mfd3POQ",
};

export function elevenlabsHeaders(cfg: ElevenLabsConfig): Record<string, string> {
  return { "xi-api-key": cfg.apiKey };
}

export function elevenlabsUrl(cfg: ElevenLabsConfig, path: string): string {
  return `${cfg.baseUrl.replace(/\/$/, "")}${path}`;
}
