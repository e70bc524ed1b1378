// Gemini's generateContent, countTokens and embedding bodies and answers
// (generativelanguage v1 / v1beta, as @google/genai and google-genai send
// them), parsed strictly: a field Gemini's API does not have is a 400 naming
// it, as Google answers. Fields Troupe accepts without sending are in
// request.ts's table, not here: here is only what the API has.
import { z } from "zod";

const record = z.record(z.string(), z.unknown());

/** One part of a turn. Exactly one kind per part, as Gemini requires; `thought` marks thinking text. */
export const partSchema = z
  .object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
    inlineData: z.object({ mimeType: z.string().min(1), data: z.string().min(1) }).strict().optional(),
    fileData: z.object({ mimeType: z.string().optional(), fileUri: z.string().min(1), displayName: z.string().optional() }).strict().optional(),
    functionCall: z.object({ id: z.string().optional(), name: z.string().min(1), args: record.optional() }).strict().optional(),
    functionResponse: z.object({ id: z.string().optional(), name: z.string().min(1), response: record.optional(), willContinue: z.boolean().optional(), scheduling: z.string().optional(), parts: z.array(record).optional() }).strict().optional(),
    executableCode: record.optional(),
    codeExecutionResult: record.optional(),
    videoMetadata: record.optional(),
    mediaResolution: record.optional(),
  })
  .strict();
export type Part = z.infer<typeof partSchema>;

export const contentSchema = z.object({ role: z.enum(["user", "model", "function", "system"]).optional(), parts: z.array(partSchema).max(4096) }).strict();
export type Content = z.infer<typeof contentSchema>;

const functionDeclarationSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().optional(),
    behavior: z.string().optional(),
    parameters: record.optional(),
    parametersJsonSchema: record.optional(),
    response: record.optional(),
    responseJsonSchema: record.optional(),
  })
  .strict();

/** A tool: function declarations, or one of Google's built-in tools (refused by name in request.ts: no model here runs them). */
export const toolSchema = z
  .object({
    functionDeclarations: z.array(functionDeclarationSchema).optional(),
    googleSearch: record.optional(),
    googleSearchRetrieval: record.optional(),
    codeExecution: record.optional(),
    urlContext: record.optional(),
    retrieval: record.optional(),
    computerUse: record.optional(),
    fileSearch: record.optional(),
    googleMaps: record.optional(),
  })
  .strict();

export const toolConfigSchema = z
  .object({
    functionCallingConfig: z.object({ mode: z.enum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"]).optional(), allowedFunctionNames: z.array(z.string().min(1)).optional() }).strict().optional(),
    retrievalConfig: record.optional(),
  })
  .strict();

export const thinkingConfigSchema = z
  .object({
    includeThoughts: z.boolean().optional(),
    thinkingBudget: z.number().int().min(-1).optional(),
    thinkingLevel: z.enum(["THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"]).optional(),
  })
  .strict();

export const generationConfigSchema = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    topP: z.number().min(0).max(1).optional(),
    topK: z.number().int().min(0).optional(),
    candidateCount: z.number().int().min(1).optional(),
    maxOutputTokens: z.number().int().min(1).max(1_000_000).optional(),
    stopSequences: z.array(z.string().min(1)).max(5).optional(),
    presencePenalty: z.number().optional(),
    frequencyPenalty: z.number().optional(),
    seed: z.number().int().optional(),
    responseMimeType: z.string().optional(),
    responseSchema: record.optional(),
    responseJsonSchema: z.unknown().optional(),
    responseModalities: z.array(z.string()).optional(),
    responseLogprobs: z.boolean().optional(),
    logprobs: z.number().int().optional(),
    thinkingConfig: thinkingConfigSchema.optional(),
    mediaResolution: z.string().optional(),
    speechConfig: record.optional(),
    imageConfig: record.optional(),
    enableEnhancedCivicAnswers: z.boolean().optional(),
  })
  .strict();
export type GenerationConfig = z.infer<typeof generationConfigSchema>;

/** The body of :generateContent and :streamGenerateContent. */
export const generateContentBodySchema = z
  .object({
    // The SDKs put the model in the path; a body may name it too (batch requests do).
    model: z.string().optional(),
    contents: z.array(contentSchema).min(1).max(10_000),
    systemInstruction: contentSchema.optional(),
    tools: z.array(toolSchema).optional(),
    toolConfig: toolConfigSchema.optional(),
    generationConfig: generationConfigSchema.optional(),
    safetySettings: z.array(record).optional(),
    cachedContent: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
  })
  .strict();
export type GenerateContentBody = z.infer<typeof generateContentBodySchema>;

/** :countTokens takes `contents`, or a whole generateContentRequest (with tools and system instruction). */
export const countTokensBodySchema = z
  .object({
    contents: z.array(contentSchema).optional(),
    generateContentRequest: generateContentBodySchema.optional(),
  })
  .strict();

const embedRequestFields = {
  content: contentSchema,
  taskType: z.string().optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().min(1).max(8192).optional(),
};

export const embedContentBodySchema = z.object({ model: z.string().optional(), ...embedRequestFields }).strict();
export type EmbedContentBody = z.infer<typeof embedContentBodySchema>;

export const batchEmbedContentsBodySchema = z
  .object({ requests: z.array(z.object({ model: z.string().optional(), ...embedRequestFields }).strict()).min(1).max(2048) })
  .strict();

// Answers (documented; built by response.ts and stream.ts).
const answerPartSchema = z.object({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  functionCall: z.object({ id: z.string().optional(), name: z.string(), args: record }).optional(),
});

export const usageMetadataSchema = z.object({
  promptTokenCount: z.number().int(),
  candidatesTokenCount: z.number().int(),
  totalTokenCount: z.number().int(),
  cachedContentTokenCount: z.number().int().optional(),
  thoughtsTokenCount: z.number().int().optional(),
});

export const generateContentResponseSchema = z.object({
  candidates: z.array(
    z.object({
      content: z.object({ role: z.literal("model"), parts: z.array(answerPartSchema) }),
      finishReason: z.string().optional(),
      index: z.number().int(),
    }),
  ),
  usageMetadata: usageMetadataSchema.optional(),
  modelVersion: z.string(),
  responseId: z.string(),
});
export type GenerateContentResponse = z.infer<typeof generateContentResponseSchema>;

export const countTokensResponseSchema = z.object({ totalTokens: z.number().int() });
export const embedContentResponseSchema = z.object({ embedding: z.object({ values: z.array(z.number()) }) });
export const batchEmbedContentsResponseSchema = z.object({ embeddings: z.array(z.object({ values: z.array(z.number()) })) });

export const geminiModelSchema = z.object({
  name: z.string().describe("models/<catalogue id>"),
  baseModelId: z.string(),
  version: z.string(),
  displayName: z.string(),
  description: z.string(),
  inputTokenLimit: z.number().int().optional(),
  outputTokenLimit: z.number().int().optional(),
  supportedGenerationMethods: z.array(z.string()),
});
export type GeminiModel = z.infer<typeof geminiModelSchema>;

export const errorBodySchema = z.object({ error: z.object({ code: z.number().int(), message: z.string(), status: z.string() }) });
