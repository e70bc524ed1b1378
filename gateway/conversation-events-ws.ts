// Live events of one conversation over a WebSocket at
// /v1/agents/conversations/{id}/events (API key with scope `agents`, in the
// Authorization header, or for browsers as the subprotocols
// `["troupe.v1", "bearer.<key>"]`; the server selects `troupe.v1`).
// The first frame is the conversation as it is; then each status change,
// appended message and failed turn as JSON text frames. Events come from the
// process-wide bus, so a socket on any replica sees every actor's events.
import type { TemplatedApp, WebSocket } from "uWebSockets.js";
import { errorBody, isTroupeError, TroupeError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { callActor, type ActorHost } from "../actors/host.ts";
import type { ConversationActorDefinition } from "../actors/conversation/conversation-actor.ts";
import type { ConversationEvent, ConversationEventBus } from "../actors/conversation/events.ts";
import type { ApiKeyService } from "../tenancy/api-keys.ts";
import type { Authenticator } from "./authenticate.ts";
import { statusLine } from "../core/http-status.ts";
import type { RouteDefinition } from "./route.ts";

const path = "/v1/agents/conversations/:id/events";
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface SocketData {
  conversationId: string;
  snapshot: unknown;
  /** The API key the socket was opened with: revoking it closes the socket. */
  keyId: string;
  unwatch?: () => void;
  closed?: boolean;
}

export interface ConversationEventsDeps {
  authenticator: Authenticator;
  apiKeys: ApiKeyService;
  actors: ActorHost;
  conversation: ConversationActorDefinition;
  events: ConversationEventBus;
  log: Logger;
}

/** For the credential check: the WebSocket is an agents endpoint taking API keys. */
const asRoute = { method: "get", path, summary: "", tag: "agents", auth: "api_key", scope: "agents", responses: {}, handler: async () => ({ status: 200 }) } satisfies RouteDefinition;

export const conversationEventsOpenApi = {
  "/v1/agents/conversations/{id}/events": {
    get: {
      operationId: "getV1AgentsConversationsIdEvents",
      summary: "WebSocket: live events of a conversation (upgrade; first frame is the conversation, then status/message/failure events)",
      tags: ["agents"],
      security: [{ apiKey: [] }],
      "x-troupe-scope": "agents",
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
      responses: {
        "101": { description: "Switching protocols to WebSocket" },
        "401": { description: "unauthorized" },
        "403": { description: "insufficient_scope | forbidden" },
        "404": { description: "not_found" },
      },
    },
  },
};

export async function attachConversationEvents(app: TemplatedApp, deps: ConversationEventsDeps): Promise<void> {
  const sockets = new Map<string, Set<WebSocket<SocketData>>>();
  await deps.events.subscribe((event: ConversationEvent, json: string) => {
    const listeners = sockets.get(event.conversation_id);
    if (!listeners) return;
    // Events arrive from the bus (Redis pub/sub in the cluster), outside any
    // uWS callback: an uncorked send would sit in uWS's buffer until the
    // replica had other traffic.
    for (const ws of listeners) ws.cork(() => ws.send(json, false));
  }, () => sockets.size > 0);

  app.ws<SocketData>(path, {
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxPayloadLength: 4 * 1024,
    maxBackpressure: 1024 * 1024,
    upgrade: (res, req, context) => {
      const headers: Record<string, string> = {};
      req.forEach((k, v) => (headers[k] = v));
      const id = (req.getParameter(0) ?? "").toLowerCase();
      const secKey = headers["sec-websocket-key"] ?? "";
      const extensions = headers["sec-websocket-extensions"] ?? "";
      const protocols = (headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim()).filter(Boolean);
      const bearerProtocol = protocols.find((p) => p.startsWith("bearer."));
      if (!headers["authorization"] && bearerProtocol) headers["authorization"] = `Bearer ${bearerProtocol.slice("bearer.".length)}`;
      let aborted = false;
      res.onAborted(() => (aborted = true));
      const requestId = crypto.randomUUID();
      void (async () => {
        const resolved = deps.authenticator.authenticate(asRoute, "GET", headers);
        const auth = resolved instanceof Promise ? await resolved : resolved;
        if (auth.kind !== "api_key") throw new TroupeError("forbidden", "this endpoint takes an API key");
        if (auth.key.scopes.length > 0 && !auth.key.scopes.includes("agents")) {
          throw new TroupeError("insufficient_scope", `this API key's scopes (${auth.key.scopes.join(", ")}) do not include "agents"`);
        }
        const limited = deps.apiKeys.checkRateLimit(auth.key);
        if (limited) await limited;
        if (!uuidPattern.test(id)) throw new TroupeError("not_found", "conversation not found");
        const snapshot = await callActor(deps.actors, deps.conversation, id, "get", { organization_id: auth.key.organization_id });
        if (aborted) return;
        // The answer must be one the client offered: troupe.v1 when given (keeps the key out of the response).
        const selected = protocols.includes("troupe.v1") ? "troupe.v1" : (protocols[0] ?? "");
        res.cork(() => res.upgrade<SocketData>({ conversationId: id, snapshot, keyId: auth.key.id }, secKey, selected, extensions, context));
      })().catch((error: unknown) => {
        if (aborted) return;
        const troupe = isTroupeError(error) ? error : new TroupeError("internal_error");
        if (!isTroupeError(error)) deps.log.error("websocket upgrade failed", { error });
        res.cork(() => {
          res.writeStatus(statusLine(troupe.status));
          res.writeHeader("content-type", "application/json");
          res.writeHeader("x-request-id", requestId);
          res.end(JSON.stringify(errorBody(troupe, requestId)));
        });
      });
    },
    open: (ws) => {
      const data = ws.getUserData();
      let set = sockets.get(data.conversationId);
      if (!set) sockets.set(data.conversationId, (set = new Set()));
      set.add(ws);
      // Not corked: an end() inside cork() left the close frame unsent until the next I/O.
      data.unwatch = deps.apiKeys.revocations.watch(data.keyId, () => ws.end(4401, "the API key was revoked"));
      // `open` runs inside res.upgrade, inside the upgrade's res.cork. A frame
      // sent from there was, about one run in six, followed by the socket
      // dropping (1006 on both sides). The snapshot goes out right after the
      // cork instead: a microtask still runs before any bus event (those come
      // from I/O callbacks), so it stays the first frame.
      queueMicrotask(() => {
        if (!data.closed) ws.cork(() => ws.send(JSON.stringify({ type: "conversation", conversation_id: data.conversationId, conversation: data.snapshot }), false));
      });
    },
    message: () => {
      // The stream is one-way; client frames are ignored.
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.closed = true;
      data.unwatch?.();
      const set = sockets.get(data.conversationId);
      set?.delete(ws);
      if (set && set.size === 0) sockets.delete(data.conversationId);
    },
  });
}
