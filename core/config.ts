// Configuration: parsed once at start from the environment with zod, frozen,
// and passed down. Nothing else reads process.env. Defaults live here, with
// their units in the names. The providers' settings are not: each provider
// declares its own, and the layer that knows the providers hands them in
// (`configLoader(providers)`, composed in gateway/config.ts), so core/ never
// loads the adapters. docs/configuration.md has one row per setting
// (test/core/config-docs.test.ts fails when the two drift).
import { z } from "zod";
import { bool, commaList, int, optionalString } from "./env.ts";

const envSchema = z.object({
  PORT: int(0, 65535).default(8080),
  HOST: z.string().default("0.0.0.0"),
  PUBLIC_URL: optionalString,
  TROUPE_DATA_DIR: z.string().default("./.troupe"),
  TROUPE_MODE: z.enum(["embedded", "dapr"]).default("embedded"),
  TROUPE_REPLICA: z.string().default("0"),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  /** What `npm start` does when the uWebSockets.js binary is not the pinned, patched build: `warn` and serve, or `refuse` to start (the container image sets refuse). */
  UWS_BINARY_CHECK: z.enum(["warn", "refuse"]).default("warn"),
  MAX_BODY_BYTES: int(1024, 1024 * 1024 * 1024).default(10 * 1024 * 1024),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default(10_000),
  /**
   * How long the ledger keeps each call's own record (kept at least this, at most 1.25×; usage reports
   * come from per-day counters kept for good). Also the usage_key idempotency window: keep it longer
   * than the longest a record can wait for the ledger (an outage, a journal replayed at the next start).
   */
  USAGE_RECORD_RETENTION_SECONDS: int(10, 10 * 366 * 24 * 3600).default(7 * 24 * 3600),
  /** A call made with an organization's own provider key (BYOK) is billed this fraction of the catalogue price: 0 (the default), the provider bills the organization; 1, full price. */
  BYOK_PRICE_FRACTION: z.coerce.number().min(0).max(1).default(0),

  REDIS_URL: optionalString,
  /** A Redis Cluster instead of one Redis: comma-separated seed nodes (any of its primaries), `host:port` or `redis[s]://[[user]:password@]host:port`; wins over REDIS_URL. */
  REDIS_CLUSTER_NODES: commaList.pipe(
    z.array(z.string().regex(/^(rediss?:\/\/([^\s@/]*@)?)?[^\s:,/@]+:\d{1,5}$/, "host:port or redis[s]://[[user]:password@]host:port, comma-separated")),
  ),

  SIGNUP_ENABLED: bool.default(true),
  SESSION_TTL_SECONDS: int(60, 365 * 24 * 3600).default(7 * 24 * 3600),
  API_KEY_PREFIX: z
    .string()
    .regex(/^[a-z][a-z0-9]{0,15}$/, "lower-case letters and digits, starting with a letter")
    .default("trp"),
  DEFAULT_RATE_LIMIT_PER_MINUTE: int(1, 10_000_000).default(600),
  /** How stale another replica's cached view of a key may get before it re-reads it. */
  KEY_CACHE_REVALIDATE_MS: int(100, 60_000).default(2_000),
  /**
   * Login throttling: failed logins allowed per account from one client address before growing
   * waits begin (counted per pair, so a stranger's failures never block the owner's address).
   */
  LOGIN_FREE_FAILURES_PER_ACCOUNT: int(1, 10_000).default(5),
  /** The same per client address, whatever the account: higher, since one address may serve many people. */
  LOGIN_FREE_FAILURES_PER_ADDRESS: int(1, 1_000_000).default(100),
  /** The first wait once the free failures are used up; it doubles with each further failure… */
  LOGIN_BACKOFF_BASE_MS: int(1, 600_000).default(1_000),
  /** …up to this cap: never a lockout longer than this. */
  LOGIN_BACKOFF_CAP_MS: int(1, 24 * 3600_000).default(5 * 60_000),
  /** Failures are forgotten this long after the last attempt (and at once for an account on a successful login). */
  LOGIN_FAILURE_WINDOW_MS: int(1_000, 7 * 24 * 3600_000).default(15 * 60_000),
  /** Signups accepted from one client address per window (SIGNUP_WINDOW_MS); past it, 429 with Retry-After. */
  SIGNUP_LIMIT_PER_ADDRESS: int(1, 1_000_000).default(20),
  /** The signup window: 1 h. */
  SIGNUP_WINDOW_MS: int(1_000, 7 * 24 * 3600_000).default(3600_000),
  /** Organizations one account may belong to before it may create another; past it, 403 quota_exceeded (a probe made 30 in 1.6 s). */
  ORGANIZATIONS_PER_ACCOUNT: int(1, 100_000).default(20),
  /** Projects one organization may hold; past it, 403 quota_exceeded. */
  PROJECTS_PER_ORGANIZATION: int(1, 100_000).default(100),
  /** Active (non-revoked) keys a project may hold, made by members; an environment's automatic test key does not count. Past it, 403 quota_exceeded, exact under concurrency (core/quota-slots.ts). */
  API_KEYS_PER_PROJECT: int(1, 100_000).default(100),
  /** Environments one project may hold, its automatic production and development ones included; past it, 403 quota_exceeded. */
  ENVIRONMENTS_PER_PROJECT: int(2, 10_000).default(20),
  /** Invitations of one organization pending at once (neither accepted nor expired); past it, 403 quota_exceeded. */
  PENDING_INVITATIONS_PER_ORGANIZATION: int(1, 100_000).default(100),
  /** Behind a proxy: the header whose last entry is the client address (e.g. x-forwarded-for); unset = the socket's peer. */
  CLIENT_ADDRESS_HEADER: optionalString,

  PROVIDER_TIMEOUT_MS: int(100, 600_000).default(60_000),
  PROVIDER_MAX_ATTEMPTS: int(1, 10).default(3),
  /** Upstream deployments (docs/operations/deployments.md): a JSON file, read at start and on SIGHUP; unset = one deployment per provider from its own variables. */
  TROUPE_DEPLOYMENTS_FILE: optionalString,

  ELASTICSEARCH_URL: optionalString,
  ELASTICSEARCH_INDEX: z.string().default("troupe-vectors"),
  /**
   * HNSW links per node (m) and candidate list while inserting
   * (ef_construction) of the dense_vector field: used when Troupe creates the
   * index; an existing index keeps its mapping. At 1,000,000 × 768 in one
   * organization, merged to one segment, 16 / 100 gave recall@10 0.846
   * (docs/benchmarks.md): larger organizations want more.
   */
  ELASTICSEARCH_HNSW_M: int(2, 512).default(16),
  ELASTICSEARCH_HNSW_EF_CONSTRUCTION: int(10, 3200).default(100),
  /** knn num_candidates per search: at least this, and 10 × top_k, at most 10,000. */
  ELASTICSEARCH_NUM_CANDIDATES: int(10, 10_000).default(400),
  /**
   * Creates the index with index.store.preload for its vectors and graph, so
   * Elasticsearch reads them into the page cache when it opens a segment: at
   * 1,000,000 × 768 searches over vectors partly on disk outlasted the 5 s
   * request timeout (docs/benchmarks.md, P5). Off where the vectors cannot fit in memory.
   */
  ELASTICSEARCH_PRELOAD_VECTORS: bool.default(true),
  /** Unset: the index takes the first configured model of gateway/index-model.ts's preference order when it is created, and keeps it. */
  EMBEDDING_INDEX_MODEL: optionalString,
  /** Bytes of a record's content as JSON (UTF-8): with the metadata cap this bounds a search response (top_k ≤ 100). */
  VECTOR_CONTENT_MAX_BYTES: int(1024, 16 * 1024 * 1024).default(64 * 1024),
  /** Bytes of a record's metadata as JSON (UTF-8). */
  VECTOR_METADATA_MAX_BYTES: int(64, 16 * 1024 * 1024).default(16 * 1024),
  /** Nesting levels of a record's metadata (the object itself is level 1). */
  VECTOR_METADATA_MAX_DEPTH: int(1, 64).default(16),
  /** Records one organization may hold in the vector index; more answers 403 quota_exceeded. */
  VECTOR_INDEX_QUOTA_PER_ORG: int(1, 1_000_000_000).default(100_000),
  /**
   * Embedded index: a partition (organization × metadata.kind) from this many
   * records is searched through an HNSW graph (approximate; built and updated
   * on its own thread, never on the event loop); smaller ones exactly.
   * 0 = always exact. 20,000: the measured setting (bench:vectors).
   */
  VECTOR_HNSW_FROM_ROWS: int(0, 1_000_000_000).default(20_000),
  /**
   * Embedded index graphs' links per node (HNSW M). A graph saved with
   * another M is rebuilt at the next start, on the graph thread. 32 (with
   * ef_construction 256) is what reached recall@10 0.97 at 1,000,000 × 768
   * (docs/benchmarks.md); 16 builds in half the time.
   */
  VECTOR_HNSW_M: int(4, 64).default(16),
  /** Embedded graphs' candidate list while inserting (ef_construction): quality of the links made from now on. */
  VECTOR_HNSW_EF_CONSTRUCTION: int(16, 2048).default(128),
  /** Embedded graphs' candidate list while searching (ef_search): recall against latency. */
  VECTOR_HNSW_EF_SEARCH: int(10, 4096).default(128),
  /** Candidates a search takes from an embedded graph and rescores in float32 (at least k). */
  VECTOR_HNSW_CANDIDATES: int(10, 4096).default(80),

  DAPR_HOST: z.string().default("127.0.0.1"),
  DAPR_HTTP_PORT: int(1, 65535).default(3500),
  /** Loopback port where daprd calls this replica's actors (never the public gateway port). */
  ACTOR_CALLBACK_PORT: int(0, 65535).default(3000),
  ACTOR_IDLE_TIMEOUT_MS: int(1_000, 24 * 3600_000).default(60 * 60_000),
  ACTOR_HANDOFF_MS: int(0, 60_000).default(3_000),
  /** Embedded host: most actors kept in memory; beyond it the least recently used idle ones deactivate (state stays stored). */
  ACTOR_MAX_RESIDENT: int(1, 10_000_000).default(20_000),

  OUTBOUND_ALLOW_HOSTS: commaList,


  /** Set: files live in this S3-compatible bucket (distributed mode); unset: under TROUPE_DATA_DIR/files. */
  S3_ENDPOINT: optionalString.pipe(z.url().optional()),
  S3_BUCKET: z.string().default("troupe-files"),
  S3_REGION: z.string().default("us-east-1"),
  S3_ACCESS_KEY_ID: optionalString,
  S3_SECRET_ACCESS_KEY: optionalString,
  /** Cap on one download of a caller- or provider-given URL (audio to transcribe, generated images). */
  MEDIA_MAX_DOWNLOAD_BYTES: int(1024, 2 * 1024 * 1024 * 1024).default(25 * 1024 * 1024),
  /** Deadline of one such download, connection to last byte. */
  MEDIA_DOWNLOAD_TIMEOUT_MS: int(100, 600_000).default(30_000),
  /** Days a file is kept for organizations without their own file_retention_days; unset: until deleted. */
  FILE_RETENTION_DAYS: optionalString.transform((v) => (v === undefined ? undefined : Number(v))).pipe(z.number().int().min(1).max(36_500).optional()),
  /** How often the retention sweep runs (one replica per interval does the work). */
  FILE_RETENTION_SWEEP_INTERVAL_MS: int(100, 7 * 24 * 3600_000).default(3600_000),

  /** Speech model of video narration; unset: routed (auto) among the speech models having the voice. */
  VIDEO_NARRATION_MODEL: optionalString,
  /** Voice of video narration; unset: the first voice of the first speech model routing picks. */
  VIDEO_NARRATION_VOICE: optionalString,
  /** Bytes (UTF-8) of one agent message: a user message, a tool output, the system prompt; more is 400 naming the field. */
  AGENT_MESSAGE_MAX_BYTES: int(1024, 64 * 1024 * 1024).default(256 * 1024),
  /** Bytes (JSON, UTF-8) of a conversation's messages and system prompt; a message that would pass it is 409 conflict. */
  AGENT_CONVERSATION_MAX_BYTES: int(4096, 1024 * 1024 * 1024).default(4 * 1024 * 1024),
  /** Days a stored Responses API response is kept (OpenAI keeps them 30 days); then its actor's reminder erases it. */
  RESPONSES_RETENTION_DAYS: int(1, 36_500).default(30),
  /** Days a Conversations API conversation is kept after its last change; then its actor's reminder erases it with its items. */
  OPENAI_CONVERSATION_RETENTION_DAYS: int(1, 36_500).default(30),
  /** Items one Conversations API conversation holds at most; an append past it is 400 naming the items. */
  OPENAI_CONVERSATION_MAX_ITEMS: int(1, 1_000_000).default(10_000),
  /** Bytes (JSON, UTF-8) of one conversation's items at most; an append past it is 400 naming the items. */
  OPENAI_CONVERSATION_MAX_BYTES: int(1024, 1024 * 1024 * 1024).default(32 * 1024 * 1024),
  /** A job's safety-net step: re-runs a job whose step was cut short by a crash after at most this long. */
  JOB_WATCHDOG_MS: int(200, 3_600_000).default(10_000),
  /** Batch lines in flight at once per process, all batches together (docs/api/batches.md, "Priority"). */
  BATCH_CONCURRENCY: int(1, 1_000).default(8),
  /** A batch line starts only while the event loop's recent delay (ms) is under this: interactive traffic first. */
  BATCH_YIELD_LAG_MS: int(1, 10_000).default(20),
  /** A batch's safety-net step: resumes a batch after a restart, retries a paused one, this often. */
  BATCH_WATCHDOG_MS: int(200, 3_600_000).default(30_000),
  /** The largest batch input file (bytes); MAX_BODY_BYTES still applies first. */
  BATCH_FILE_MAX_BYTES: int(1024, 1024 * 1024 * 1024).default(100 * 1024 * 1024),
  /** The most lines in one batch input file. */
  BATCH_MAX_LINES: int(1, 1_000_000).default(50_000),
  /** Response cache: stored (compressed) bytes per organization, every store; past it the least recently used answers are evicted. */
  CACHE_ORG_QUOTA_BYTES: int(1024, 1024 * 1024 * 1024 * 1024).default(256 * 1024 * 1024),
  /** Response cache: an answer whose JSON is larger is never stored (also bounds what one Redis value may hold). */
  CACHE_MAX_ENTRY_BYTES: int(1024, 64 * 1024 * 1024).default(1024 * 1024),
  /** Response cache: a hit is billed this fraction of the model's catalogue price for the tokens it stands for; 0 (the default), free. */
  CACHE_HIT_PRICE_FRACTION: z.coerce.number().min(0).max(1).default(0),
  /** Deadline of one webhook delivery attempt (connect to answer); no 2xx within it is a failed attempt. */
  WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  /** Multiplies every delay of the retry schedule (5 s … 24 h, ~3 days in all): tests and benchmarks shorten it, e.g. 0.0001. */
  WEBHOOK_RETRY_SCALE: z.coerce.number().positive().max(100).default(1),
  /** Delivery records (attempts) kept per webhook, newest first; older ones are dropped. */
  WEBHOOK_MAX_DELIVERIES: int(10, 100_000).default(100),
  /** Active webhooks one organization may have (a deleted or disabled one no longer counts); past it, 403 quota_exceeded, exact under concurrency (core/quota-slots.ts). */
  WEBHOOK_ENDPOINTS_PER_ORGANIZATION: int(1, 10_000).default(20),
  /**
   * 32 bytes, base64 or hex: the AES-256-GCM key webhook secrets are sealed with at rest. Required with
   * TROUPE_MODE=dapr (every replica must open what another sealed); embedded and unset: generated once
   * into <TROUPE_DATA_DIR>/webhook-secret.key (mode 0600).
   */
  WEBHOOK_SECRET_KEY: optionalString.refine((v) => v === undefined || secretKeyBytes(v) !== undefined, "must be 32 bytes as base64 (44 characters) or hex (64 characters)"),
  /** Set: Prometheus metrics are recorded and served at GET /metrics on this port (0 = any free port); unset: metrics off, nothing recorded. */
  METRICS_PORT: optionalString.transform((v) => (v === undefined ? undefined : Number(v))).pipe(z.number().int().min(0).max(65535).optional()),
  /** Interface the metrics listener binds (Prometheus scrapes it; the public gateway port never serves /metrics). */
  METRICS_HOST: z.string().default("0.0.0.0"),
  /** Set: OpenTelemetry spans are exported over OTLP/HTTP to <endpoint>/v1/traces; unset: tracing off, nothing loaded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalString.pipe(z.url().optional()),
  /** Overrides the traces URL itself (OTel's standard variable); default <OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalString.pipe(z.url().optional()),
  OTEL_SERVICE_NAME: z.string().default("troupe"),
  /** How often each replica publishes its snapshot (breakers, actors per type) for the operator's console. */
  CONSOLE_SNAPSHOT_INTERVAL_MS: int(500, 600_000).default(5_000),
  /** How long the request log keeps each call's entry (7 days; dropped by generation, a quarter of the window at a time). */
  REQUEST_LOG_RETENTION_SECONDS: int(60, 10 * 366 * 24 * 3600).default(7 * 24 * 3600),
  /** The most entries the request log holds (~750 bytes each on disk with its indexes); past it the oldest generations go early. */
  REQUEST_LOG_MAX_ENTRIES: int(1_000, 1_000_000_000).default(1_000_000),
});

export type RawEnv = Record<string, string | undefined>;

/**
 * The providers' part of the configuration, from the layer that knows them
 * (providers/registry.ts `providerConfig`): their variables, parsed with the
 * settings above, and how the parsed environment becomes `config.providers`'
 * per-provider settings.
 */
export interface ProviderConfigPart<P extends object> {
  readonly envShape: z.ZodRawShape;
  readonly settings: (parsed: Readonly<Record<string, unknown>>) => P;
}

/** A 32-byte key written as hex (64 characters) or base64 (standard or url-safe); undefined if it is neither. */
function secretKeyBytes(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.length === 32 ? bytes : undefined;
}

/** The key bytes of a WEBHOOK_SECRET_KEY value (or of the key file holding one); throws on anything else. */
export function decodeSecretKey(text: string): Buffer {
  const bytes = secretKeyBytes(text);
  if (!bytes) throw new Error("a webhook secret key must be 32 bytes as base64 or hex");
  return bytes;
}

/** The S3 backend's settings, or undefined for the data directory; half a configuration is refused. */
function s3Settings(e: z.infer<typeof envSchema>) {
  if (!e.S3_ENDPOINT) return undefined;
  if (!e.S3_ACCESS_KEY_ID || !e.S3_SECRET_ACCESS_KEY) {
    throw new Error("Invalid configuration: S3_ENDPOINT needs S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY");
  }
  return { endpoint: e.S3_ENDPOINT, bucket: e.S3_BUCKET, region: e.S3_REGION, accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY };
}

/** OTLP/HTTP traces: on when an endpoint is set (OTel's own variable names). */
function tracingSettings(e: z.infer<typeof envSchema>) {
  const traces = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (e.OTEL_EXPORTER_OTLP_ENDPOINT ? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, "")}/v1/traces` : undefined);
  return traces === undefined ? undefined : { tracesUrl: traces, serviceName: e.OTEL_SERVICE_NAME };
}

/**
 * The configuration's schema with the providers' variables, built once: the
 * names of every setting, and `load`, which parses an environment (the
 * process's by default) into the frozen configuration.
 */
export function configLoader<P extends object>(providers: ProviderConfigPart<P>) {
  const schema = envSchema.extend(providers.envShape);
  const settingNames: readonly string[] = Object.freeze(Object.keys(schema.shape));
  const load = (env: RawEnv = process.env): Config<P> => {
    const result = schema.safeParse(env);
    if (!result.success) throw new Error(`Invalid configuration:\n${z.prettifyError(result.error)}`);
    // The provider keys are typed loosely (the providers' part builds them); each descriptor reads its own.
    const e = result.data as z.output<typeof envSchema>;
    if (e.TROUPE_MODE === "dapr" && e.WEBHOOK_SECRET_KEY === undefined) {
      throw new Error("Invalid configuration: WEBHOOK_SECRET_KEY is required with TROUPE_MODE=dapr (32 bytes, base64 or hex; e.g. `openssl rand -base64 32`)");
    }
    return configFrom(e, providers.settings(result.data));
  };
  return { settingNames, load };
}

function configFrom<P extends object>(e: z.output<typeof envSchema>, providerSettings: P) {
  const config = {
    port: e.PORT,
    host: e.HOST,
    publicUrl: e.PUBLIC_URL,
    dataDir: e.TROUPE_DATA_DIR,
    mode: e.TROUPE_MODE,
    replica: e.TROUPE_REPLICA,
    logLevel: e.LOG_LEVEL,
    uwsBinaryCheck: e.UWS_BINARY_CHECK,
    maxBodyBytes: e.MAX_BODY_BYTES,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    usageRetentionSeconds: e.USAGE_RECORD_RETENTION_SECONDS,
    byokPriceFraction: e.BYOK_PRICE_FRACTION,
    cacheHitPriceFraction: e.CACHE_HIT_PRICE_FRACTION,
    redisUrl: e.REDIS_URL,
    redisClusterNodes: e.REDIS_CLUSTER_NODES,
    tenancy: {
      signupEnabled: e.SIGNUP_ENABLED,
      sessionTtlSeconds: e.SESSION_TTL_SECONDS,
      apiKeyPrefix: e.API_KEY_PREFIX,
      defaultRateLimitPerMinute: e.DEFAULT_RATE_LIMIT_PER_MINUTE,
      keyCacheRevalidateMs: e.KEY_CACHE_REVALIDATE_MS,
      loginThrottle: {
        freeFailuresPerAccount: e.LOGIN_FREE_FAILURES_PER_ACCOUNT,
        freeFailuresPerAddress: e.LOGIN_FREE_FAILURES_PER_ADDRESS,
        baseMs: e.LOGIN_BACKOFF_BASE_MS,
        capMs: e.LOGIN_BACKOFF_CAP_MS,
        windowMs: e.LOGIN_FAILURE_WINDOW_MS,
      },
      signupThrottle: { perAddress: e.SIGNUP_LIMIT_PER_ADDRESS, windowMs: e.SIGNUP_WINDOW_MS },
      quotas: {
        organizationsPerAccount: e.ORGANIZATIONS_PER_ACCOUNT,
        projectsPerOrganization: e.PROJECTS_PER_ORGANIZATION,
        apiKeysPerProject: e.API_KEYS_PER_PROJECT,
        environmentsPerProject: e.ENVIRONMENTS_PER_PROJECT,
        pendingInvitationsPerOrganization: e.PENDING_INVITATIONS_PER_ORGANIZATION,
      },
      clientAddressHeader: e.CLIENT_ADDRESS_HEADER?.toLowerCase(),
    },
    providers: {
      timeoutMs: e.PROVIDER_TIMEOUT_MS,
      maxAttempts: e.PROVIDER_MAX_ATTEMPTS,
      deploymentsFile: e.TROUPE_DEPLOYMENTS_FILE,
      ...providerSettings,
    },
    vectors: {
      elasticsearchUrl: e.ELASTICSEARCH_URL,
      elasticsearchIndex: e.ELASTICSEARCH_INDEX,
      elasticsearchHnsw: { m: e.ELASTICSEARCH_HNSW_M, efConstruction: e.ELASTICSEARCH_HNSW_EF_CONSTRUCTION },
      elasticsearchNumCandidates: e.ELASTICSEARCH_NUM_CANDIDATES,
      elasticsearchPreloadVectors: e.ELASTICSEARCH_PRELOAD_VECTORS,
      indexModel: e.EMBEDDING_INDEX_MODEL,
      hnsw: {
        fromRows: e.VECTOR_HNSW_FROM_ROWS,
        connectivity: e.VECTOR_HNSW_M,
        expansionAdd: e.VECTOR_HNSW_EF_CONSTRUCTION,
        expansionSearch: e.VECTOR_HNSW_EF_SEARCH,
        candidates: e.VECTOR_HNSW_CANDIDATES,
      },
      limits: {
        contentMaxBytes: e.VECTOR_CONTENT_MAX_BYTES,
        metadataMaxBytes: e.VECTOR_METADATA_MAX_BYTES,
        metadataMaxDepth: e.VECTOR_METADATA_MAX_DEPTH,
        quotaPerOrganization: e.VECTOR_INDEX_QUOTA_PER_ORG,
      },
    },
    actors: {
      daprHost: e.DAPR_HOST,
      daprHttpPort: e.DAPR_HTTP_PORT,
      callbackPort: e.ACTOR_CALLBACK_PORT,
      idleTimeoutMs: e.ACTOR_IDLE_TIMEOUT_MS,
      handOffMs: e.ACTOR_HANDOFF_MS,
      maxResident: e.ACTOR_MAX_RESIDENT,
    },
    outboundAllowHosts: e.OUTBOUND_ALLOW_HOSTS,
    observability: {
      metrics: e.METRICS_PORT === undefined ? undefined : { port: e.METRICS_PORT, host: e.METRICS_HOST },
      tracing: tracingSettings(e),
      consoleSnapshotIntervalMs: e.CONSOLE_SNAPSHOT_INTERVAL_MS,
      requestLog: { retentionSeconds: e.REQUEST_LOG_RETENTION_SECONDS, maxEntries: e.REQUEST_LOG_MAX_ENTRIES },
    },
    media: {
      s3: s3Settings(e),
      maxDownloadBytes: e.MEDIA_MAX_DOWNLOAD_BYTES,
      downloadTimeoutMs: e.MEDIA_DOWNLOAD_TIMEOUT_MS,
      retention: { defaultDays: e.FILE_RETENTION_DAYS, sweepIntervalMs: e.FILE_RETENTION_SWEEP_INTERVAL_MS },
    },
    agents: {
      messageMaxBytes: e.AGENT_MESSAGE_MAX_BYTES,
      conversationMaxBytes: e.AGENT_CONVERSATION_MAX_BYTES,
    },
    responses: {
      retentionDays: e.RESPONSES_RETENTION_DAYS,
    },
    openAiConversations: {
      retentionDays: e.OPENAI_CONVERSATION_RETENTION_DAYS,
      maxItems: e.OPENAI_CONVERSATION_MAX_ITEMS,
      maxBytes: e.OPENAI_CONVERSATION_MAX_BYTES,
    },
    jobs: {
      narrationModel: e.VIDEO_NARRATION_MODEL,
      narrationVoice: e.VIDEO_NARRATION_VOICE,
      watchdogMs: e.JOB_WATCHDOG_MS,
    },
    batches: {
      concurrency: e.BATCH_CONCURRENCY,
      yieldLagMs: e.BATCH_YIELD_LAG_MS,
      watchdogMs: e.BATCH_WATCHDOG_MS,
      maxFileBytes: e.BATCH_FILE_MAX_BYTES,
      maxLines: e.BATCH_MAX_LINES,
    },
    cache: {
      orgQuotaBytes: e.CACHE_ORG_QUOTA_BYTES,
      maxEntryBytes: e.CACHE_MAX_ENTRY_BYTES,
    },
    webhooks: {
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryScale: e.WEBHOOK_RETRY_SCALE,
      maxDeliveries: e.WEBHOOK_MAX_DELIVERIES,
      endpointsPerOrganization: e.WEBHOOK_ENDPOINTS_PER_ORGANIZATION,
      /** Undefined: embedded mode's key file in the data directory (secret-box.ts). */
      secretKey: e.WEBHOOK_SECRET_KEY,
    },
  };
  return deepFreeze(config);
}

/** The configuration; `P` is the providers' part (gateway/config.ts names the whole one). Below providers/, code reads the rest. */
export type Config<P extends object = object> = ReturnType<typeof configFrom<P>>;
export type TenancyConfig = Config["tenancy"];
/** The router's own settings; each provider's are the providers' part. */
export type ProvidersConfig = Config["providers"];
export type VectorsConfig = Config["vectors"];
export type ActorsConfig = Config["actors"];
export type MediaConfig = Config["media"];
export type JobsConfig = Config["jobs"];
export type AgentsConfig = Config["agents"];
export type WebhooksConfig = Config["webhooks"];
export type ObservabilityConfig = Config["observability"];

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
