// Agents (docs/api/agents.md): each conversation is a
// ConversationActor; the gateway checks the key and the body, then calls it.
// The list reads the directory, so it works on both hosts. A conversation
// belongs to the environment of the key that made it: keys of another
// environment get 404, and the list holds the key's environment's.
import { z } from "zod";
import { TroupeError, invalidRequest, type ErrorCode } from "../../core/errors.ts";
import { callActor, callActorJson, type ActorHost } from "../../actors/host.ts";
import { reservedToolNames } from "../../actors/conversation/builtin-tools.ts";
import type { ConversationActorDefinition } from "../../actors/conversation/conversation-actor.ts";
import type { ConversationDirectory } from "../../actors/conversation/directory.ts";
import { conversationSchema, conversationSummarySchema } from "../../actors/conversation/types.ts";
import { uuid } from "../../core/ids.ts";
import { text } from "../../core/text-schema.ts";
import { modelIdSchema, withModel } from "../../providers/catalogue.ts";
import type { Router } from "../../providers/router.ts";
import type { Payer } from "../../providers/usage.ts";
import { routingStrategySchema, toolDefinitionSchema } from "../../providers/types.ts";
import { defineRoute, json, jsonText, routeGroup } from "../route.ts";
import type { ApiKeyRecord } from "../../tenancy/types.ts";
import type { AgentsConfig } from "../../core/config.ts";
import { generationEstimateNanos, type CallBilling } from "../billed-call.ts";
import { payerOf } from "../usage-context.ts";
import { environmentList } from "../schemas.ts";

export interface AgentRouteDeps {
  actors: ActorHost;
  conversation: ConversationActorDefinition;
  directory: ConversationDirectory;
  router: Router;
  /** Budgets: a hard-limited project's turn starts only while it is under its limit. */
  billing?: CallBilling | undefined;
  /** AGENT_MESSAGE_MAX_BYTES (checked here) and AGENT_CONVERSATION_MAX_BYTES (by the ConversationActor). */
  limits: AgentsConfig;
}

/** What every turn-starting actor call carries: whose conversation, who pays, and the request id usage is keyed by. */
interface TurnCaller {
  organization_id: string;
  environment_id: string;
  payer: Payer;
  request_id: string;
}

/** Who the turn's actor call runs for: the key's organization, its payer and the request id. */
function turnCaller({ auth: { key }, requestId }: { auth: { key: ApiKeyRecord }; requestId: string }): TurnCaller {
  return { organization_id: key.organization_id, environment_id: key.environment_id, payer: payerOf(key), request_id: requestId };
}

/** What every agents route declares besides its own fields: its document tag and the API key with the agents scope. */
const agentRoute = routeGroup({ tag: "agents", auth: "api_key", scope: "agents" });

/**
 * The message and tool-output routes both start a turn: same answer, same
 * failures, same billing. A hard-limited project's turn holds, while it
 * runs, a reservation of one model call's most output (the conversation's
 * model, or the dearest text model when routed), so a burst of turns cannot
 * all start on the same unspent budget; its calls are billed as they end.
 */
function turnRoute<const P extends string>(deps: AgentRouteDeps, path: P) {
  return {
    ...agentRoute("post", path),
    responses: { 200: conversationSchema },
    errors: ["not_found", "conflict", "budget_exceeded", "provider_error", "provider_timeout", "no_provider_available"] satisfies ErrorCode[],
    billing: {
      admit: "hold" as const,
      via: deps,
      // Only live keys are ever stopped: test keys skip the read.
      estimate: (ctx: { auth: { key: ApiKeyRecord }; params: { id: string } }): number | Promise<number> => {
        if (!ctx.auth.key.live || !deps.billing) return 0;
        return deps.directory.model(conversationId(ctx.params.id)).then((model) => generationEstimateNanos(deps.router.catalogue, "text", model, 0, null));
      },
    },
  };
}

const MAX_CUSTOM_TOOLS = 64;

/**
 * A message's text within AGENT_MESSAGE_MAX_BYTES of UTF-8 (400 naming the
 * field past it). Documented as maxLength in characters, which bound bytes
 * from below; the byte count is the rule.
 */
function messageText(maxBytes: number, min = 0) {
  // meta again: a refinement is a new schema, and the OpenAPI document reads the bounds from its meta.
  return text({ min, max: maxBytes })
    .refine((s) => Buffer.byteLength(s) <= maxBytes, `must be at most ${maxBytes} bytes of UTF-8`)
    .meta(min > 0 ? { minLength: min, maxLength: maxBytes } : { maxLength: maxBytes });
}

/** The request bodies, with the configured per-message cap. */
function bodies(limits: AgentsConfig) {
  const createBody = z
    .object({
      model: z.string().nullable().default(null),
      routing_strategy: routingStrategySchema.default("auto"),
      system_prompt: messageText(limits.messageMaxBytes).default(""),
      tools: z.array(toolDefinitionSchema).max(MAX_CUSTOM_TOOLS).default([]),
    })
    .strict();
  const messageBody = z.object({ content: messageText(limits.messageMaxBytes, 1) }).strict();
  const toolOutputsBody = z
    .object({
      outputs: z
        .array(z.object({ tool_call_id: z.string().min(1), output: messageText(limits.messageMaxBytes) }).strict())
        .min(1, "must answer the pending tool calls"),
    })
    .strict();
  return { createBody, messageBody, toolOutputsBody };
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A conversation id that is not a UUID cannot exist: 404 without activating an actor. */
function conversationId(id: string): string {
  if (!uuidPattern.test(id)) throw new TroupeError("not_found", "conversation not found");
  return id.toLowerCase();
}

export function agentRoutes(deps: AgentRouteDeps) {
  const { actors, conversation } = deps;
  const { createBody, messageBody, toolOutputsBody } = bodies(deps.limits);
  // An agent's model must serve text with tools: the schema says which ids those are.
  const body = withModel(createBody, modelIdSchema(deps.router.catalogue, { category: "text", tools: true }).nullable().default(null));
  return [
    defineRoute({
      ...agentRoute("post", "/v1/agents/conversations"),
      summary: "Start a conversation with a server-side agent",
      body,
      responses: { 201: conversationSchema },
      errors: ["no_provider_available"],
      handler: async (ctx) => {
        const { key } = ctx.auth;
        const names = new Set<string>();
        ctx.body.tools.forEach((tool, i) => {
          if (reservedToolNames.has(tool.name)) throw invalidRequest([{ path: `body.tools.${i}.name`, message: `${tool.name} is a built-in tool name` }]);
          if (names.has(tool.name)) throw invalidRequest([{ path: `body.tools.${i}.name`, message: `${tool.name} is declared twice` }]);
          names.add(tool.name);
        });
        // Refuse a model that cannot serve an agent (unknown, wrong category, no tools) before storing anything.
        deps.router.plan(ctx.body.model, ctx.body.routing_strategy, { category: "text", tools: true });
        const created = await callActor(actors, conversation, uuid(), "create", {
          owner: { organization_id: key.organization_id, project_id: key.project_id, environment_id: key.environment_id },
          model: ctx.body.model,
          routing_strategy: ctx.body.routing_strategy,
          system_prompt: ctx.body.system_prompt,
          tools: ctx.body.tools,
        });
        return json(201, created);
      },
    }),
    defineRoute({
      ...agentRoute("get", "/v1/agents/conversations"),
      summary: "Conversations of the key's environment, newest first (summaries without messages)",
      ...environmentList(conversationSummarySchema, (environmentId, limit, cursor) => deps.directory.list(environmentId, limit, cursor)),
    }),
    defineRoute({
      ...agentRoute("get", "/v1/agents/conversations/:id"),
      summary: "A conversation with all its messages",
      responses: { 200: conversationSchema },
      errors: ["not_found"],
      handler: async (ctx) =>
        jsonText(200, await callActorJson(actors, conversation, conversationId(ctx.params.id), "get", { organization_id: ctx.auth.key.organization_id, environment_id: ctx.auth.key.environment_id })),
    }),
    defineRoute({
      ...turnRoute(deps, "/v1/agents/conversations/:id/messages"),
      summary: "Send a user message; runs the agent until it answers or needs your tools",
      body: messageBody,
      handler: async (ctx) => jsonText(200, await callActorJson(actors, conversation, conversationId(ctx.params.id), "postMessage", { ...turnCaller(ctx), content: ctx.body.content })),
    }),
    defineRoute({
      ...turnRoute(deps, "/v1/agents/conversations/:id/tool-outputs"),
      summary: "Answer every pending custom tool call; the agent then continues",
      body: toolOutputsBody,
      handler: async (ctx) => jsonText(200, await callActorJson(actors, conversation, conversationId(ctx.params.id), "submitToolOutputs", { ...turnCaller(ctx), outputs: ctx.body.outputs })),
    }),
  ];
}
