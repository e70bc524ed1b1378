// Starts and stops a local Troupe cluster as child processes: Redis (unless
// a URL is given), Dapr placement and scheduler, and N replicas, each an app
// process (the gateway, or a test app) with its own daprd sidecar. In
// "embedded" mode there is no Dapr at all: N app processes on their own data
// dirs. Used by `npm run cluster` (scripts/cluster.ts), the actor
// conformance tests and the actor benchmark, so all three run the same
// topology. Flags mirror dapr/smoke.sh, which verified them against the
// binaries dapr/build.sh builds. Every port is loopback; ports not pinned
// by the caller are chosen free.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { daprBinDir, freePorts, repoDir, requireDaprPrerequisites } from "./dapr-prerequisites.ts";

import { webhookSecretKey } from "../../actors/webhooks/secret-box.ts";
export { daprBinDir, freePorts, repoDir, requireDaprPrerequisites } from "./dapr-prerequisites.ts";
export const daprAppId = "troupe";

export interface ClusterOptions {
  mode: "dapr" | "embedded";
  replicas: number;
  /** Logs, rendered components, scheduler data and replica data dirs live here. */
  dataDir: string;
  /** The replica's entry script, run with this Node (`gateway/main.ts` or a test app). */
  appEntry: string;
  /** Extra environment for every replica (merged over the inherited one). */
  appEnv?: Record<string, string>;
  /** Replica i's gateway listens on basePort + i; free ports when undefined. */
  basePort?: number;
  /** Replica i's daprd HTTP API listens on daprHttpBasePort + i; free ports when undefined. */
  daprHttpBasePort?: number;
  /** Use this Redis instead of starting one (redis://[:password@]host:port). */
  redisUrl?: string;
  /** Build the Dapr binaries with dapr/build.sh when dapr/.bin lacks one (several minutes cold). */
  build?: boolean;
  readyTimeoutMs?: number;
  daprLogLevel?: "debug" | "info" | "warn" | "error";
  log?: (line: string) => void;
}

export interface ReplicaInfo {
  index: number;
  gatewayUrl: string;
  /** daprd's HTTP API (dapr mode). */
  daprHttpUrl: string | undefined;
  callbackPort: number;
  dataDir: string;
  appLog: string;
  daprdLog: string | undefined;
}

interface Managed {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

interface ReplicaPorts {
  gateway: number;
  callback: number;
  daprHttp: number;
  daprGrpc: number;
  daprInternal: number;
  daprMetrics: number;
}

export class LocalCluster {
  readonly options: ClusterOptions;
  readonly replicas: ReplicaInfo[] = [];
  redisUrl = "";
  private readonly infra: Managed[] = [];
  private readonly apps = new Map<number, Managed>();
  private readonly sidecars = new Map<number, Managed>();
  private readonly ports: ReplicaPorts[] = [];
  private placementAddress = "";
  private schedulerAddress = "";
  private componentsDir = "";
  private stopped = false;
  private building: ChildProcess | undefined;

  constructor(options: ClusterOptions) {
    this.options = options;
    // Last resort when the owner exits without stop() (an uncaught error, process.exit):
    // no daprd, placement, scheduler or Redis outlives it.
    process.once("exit", this.killAllNow);
  }

  private readonly killAllNow = (): void => {
    this.building?.kill("SIGKILL");
    for (const managed of [...this.apps.values(), ...this.sidecars.values(), ...this.infra]) {
      if (managed.child.exitCode === null && managed.child.signalCode === null) managed.child.kill("SIGKILL");
    }
  };

  static async start(options: ClusterOptions): Promise<LocalCluster> {
    const cluster = new LocalCluster(options);
    await cluster.start();
    return cluster;
  }

  /** Starts everything; on failure (or a stop() meanwhile) stops what it started and throws. */
  async start(): Promise<void> {
    try {
      await this.boot();
      if (this.stopped) throw new Error("the cluster was stopped while starting");
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  private log(line: string): void {
    (this.options.log ?? ((l: string) => process.stderr.write(`cluster: ${l}\n`)))(line);
  }

  private get logDir(): string {
    return join(this.options.dataDir, "logs");
  }

  private async boot(): Promise<void> {
    const { options } = this;
    mkdirSync(this.logDir, { recursive: true });
    if (options.mode === "dapr") {
      const missing = ["daprd", "placement", "scheduler"].some((b) => !existsSync(join(daprBinDir, b)));
      if (options.build && missing) await this.buildDapr();
      requireDaprPrerequisites({ redisUrl: options.redisUrl });
      const [redisPort, placement, placementHz, placementMetrics, placementRaft, sched, schedHz, schedMetrics, etcdClient, etcdPeer] =
        await freePorts(10);
      await this.startRedis(redisPort!);
      this.renderComponents();
      this.placementAddress = `127.0.0.1:${placement}`;
      this.schedulerAddress = `127.0.0.1:${sched}`;
      const bin = (name: string) => join(daprBinDir, name);
      // prettier-ignore
      this.infra.push(this.spawnLogged("placement", bin("placement"), [
        "--listen-address", "127.0.0.1", "--port", String(placement),
        "--healthz-listen-address", "127.0.0.1", "--healthz-port", String(placementHz),
        "--metrics-listen-address", "127.0.0.1", "--metrics-port", String(placementMetrics),
        "--initial-cluster", `dapr-placement-0=127.0.0.1:${placementRaft}`,
      ]));
      const runDir = join(options.dataDir, "run");
      // prettier-ignore
      this.infra.push(this.spawnLogged("scheduler", bin("scheduler"), [
        "--listen-address", "127.0.0.1", "--port", String(sched),
        "--healthz-listen-address", "127.0.0.1", "--healthz-port", String(schedHz),
        "--metrics-listen-address", "127.0.0.1", "--metrics-port", String(schedMetrics),
        "--etcd-data-dir", join(runDir, "scheduler-etcd"),
        "--etcd-client-listen-address", "127.0.0.1", "--etcd-client-port", String(etcdClient),
        "--etcd-initial-cluster", `dapr-scheduler-server-0=http://localhost:${etcdPeer}`,
        "--identity-directory-write", join(runDir, "scheduler-identity"),
      ]));
      await Promise.all([
        this.waitHttp("placement", `http://127.0.0.1:${placementHz}/healthz`, this.infra[this.infra.length - 2]!),
        this.waitHttp("scheduler", `http://127.0.0.1:${schedHz}/healthz`, this.infra[this.infra.length - 1]!),
      ]);
    }
    // One call for every replica, so no two replicas are given the same port.
    const replicaPorts = await freePorts(6 * options.replicas);
    for (let i = 0; i < options.replicas; i++) {
      const free = replicaPorts.slice(6 * i, 6 * i + 6);
      this.ports.push({
        gateway: options.basePort === undefined ? free[0]! : options.basePort + i,
        callback: free[1]!,
        daprHttp: options.daprHttpBasePort === undefined ? free[2]! : options.daprHttpBasePort + i,
        daprGrpc: free[3]!,
        daprInternal: free[4]!,
        daprMetrics: free[5]!,
      });
      const ports = this.ports[i]!;
      this.replicas.push({
        index: i,
        gatewayUrl: `http://127.0.0.1:${ports.gateway}`,
        daprHttpUrl: options.mode === "dapr" ? `http://127.0.0.1:${ports.daprHttp}` : undefined,
        callbackPort: ports.callback,
        dataDir: join(options.dataDir, `replica-${i}`),
        appLog: join(this.logDir, `replica-${i}.log`),
        daprdLog: options.mode === "dapr" ? join(this.logDir, `daprd-${i}.log`) : undefined,
      });
    }
    await Promise.all(this.replicas.map((r) => this.startReplica(r.index)));
  }

  /** bash dapr/build.sh (a no-op when cached), asynchronously so a signal can stop the cluster meanwhile. */
  private async buildDapr(): Promise<void> {
    const build = spawn("bash", [join(repoDir, "dapr/build.sh")], { stdio: ["ignore", "inherit", "inherit"], cwd: repoDir });
    this.building = build;
    const code = await new Promise<number | null>((resolveBuild) => {
      build.once("exit", (c) => resolveBuild(c));
      build.once("error", () => resolveBuild(null));
    });
    this.building = undefined;
    if (code !== 0) throw new Error(`bash dapr/build.sh failed (exit ${code})`);
  }

  private async startRedis(port: number): Promise<void> {
    if (this.options.redisUrl) {
      this.redisUrl = this.options.redisUrl;
      return;
    }
    const dir = join(this.options.dataDir, "redis");
    mkdirSync(dir, { recursive: true });
    const redis = this.spawnLogged("redis", "redis-server", ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", dir]);
    this.infra.push(redis);
    this.redisUrl = `redis://127.0.0.1:${port}`;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (redis.child.exitCode !== null) throw new Error(`redis-server exited; see ${join(this.logDir, "redis.log")}`);
      const ping = spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), "ping"], { encoding: "utf8" });
      if (ping.stdout?.trim() === "PONG") return;
      if (Date.now() > deadline) throw new Error("redis-server did not answer PING in 10 s");
      await sleep(50);
    }
  }

  /** components/*.yaml → <dataDir>/run/components with the Redis address filled in. */
  private renderComponents(): void {
    const url = new URL(this.redisUrl);
    const host = `${url.hostname}:${url.port || "6379"}`;
    const password = decodeURIComponent(url.password);
    const escape = (v: string) => JSON.stringify(v).slice(1, -1);
    this.componentsDir = join(this.options.dataDir, "run", "components");
    mkdirSync(this.componentsDir, { recursive: true });
    for (const file of readdirSync(join(repoDir, "components")).filter((f) => f.endsWith(".yaml"))) {
      const text = readFileSync(join(repoDir, "components", file), "utf8")
        .replaceAll("{{REDIS_HOST}}", escape(host))
        .replaceAll("{{REDIS_PASSWORD}}", escape(password));
      if (text.includes("{{")) throw new Error(`components/${file} has a placeholder the launcher does not know`);
      writeFileSync(join(this.componentsDir, file), text);
    }
  }

  /** Starts whatever of replica i is not running (app, and daprd in dapr mode) and waits for /readyz. */
  async startReplica(index: number): Promise<void> {
    const replica = this.replicas[index];
    const ports = this.ports[index];
    if (!replica || !ports) throw new Error(`no replica ${index}`);
    mkdirSync(replica.dataDir, { recursive: true });
    const { options } = this;
    if (options.mode === "dapr" && !this.sidecars.has(index)) {
      // prettier-ignore
      const args = [
        "--app-id", daprAppId, "--app-port", String(ports.callback), "--app-channel-address", "127.0.0.1",
        "--dapr-listen-addresses", "127.0.0.1",
        "--dapr-http-port", String(ports.daprHttp), "--dapr-grpc-port", String(ports.daprGrpc),
        "--dapr-internal-grpc-listen-address", "127.0.0.1", "--dapr-internal-grpc-port", String(ports.daprInternal),
        "--metrics-listen-address", "127.0.0.1", "--metrics-port", String(ports.daprMetrics),
        "--placement-host-address", this.placementAddress,
        "--scheduler-host-address", this.schedulerAddress,
        "--resources-path", this.componentsDir,
        "--config", join(repoDir, "dapr/config.yaml"),
        "--log-level", options.daprLogLevel ?? "warn",
        "--dapr-graceful-shutdown-seconds", "5",
        // A crashed app stops hosting actors within ~2 s (daprd leaves placement
        // until /healthz answers again), so its actors fail over like a dead replica's.
        "--enable-app-health-check", "--app-health-check-path", "/healthz",
        "--app-health-probe-interval", "1", "--app-health-threshold", "2",
      ];
      // DAPR_HOST_IP keeps the address daprd registers with placement on loopback.
      this.sidecars.set(index, this.spawnLogged(`daprd-${index}`, join(daprBinDir, "daprd"), args, { DAPR_HOST_IP: "127.0.0.1" }));
    }
    if (!this.apps.has(index)) {
      const env: Record<string, string> = {
        // Every replica seals and opens webhook secrets with one key (required with TROUPE_MODE=dapr):
        // the inherited WEBHOOK_SECRET_KEY, else one generated once into the cluster's data directory.
        WEBHOOK_SECRET_KEY: process.env["WEBHOOK_SECRET_KEY"] ?? webhookSecretKey(undefined, options.dataDir).toString("base64"),
        // Every test signs up from 127.0.0.1, on one Redis: the per-address signup limit is lifted unless appEnv sets it;
        // no actor hand-off on SIGTERM either (stop() ends every replica at once) unless appEnv sets ACTOR_HANDOFF_MS.
        SIGNUP_LIMIT_PER_ADDRESS: "1000000", ACTOR_HANDOFF_MS: "0",
        ...options.appEnv,
        TROUPE_MODE: options.mode,
        PORT: String(ports.gateway),
        HOST: "127.0.0.1",
        ACTOR_CALLBACK_PORT: String(ports.callback),
        DAPR_HOST: "127.0.0.1",
        DAPR_HTTP_PORT: String(ports.daprHttp),
        TROUPE_DATA_DIR: replica.dataDir,
        TROUPE_REPLICA: String(index),
      };
      if (this.redisUrl) env.REDIS_URL = this.redisUrl;
      this.apps.set(index, this.spawnLogged(`replica-${index}`, process.execPath, [options.appEntry], env));
    }
    const app = this.apps.get(index)!;
    await this.waitHttp(`replica ${index}`, `${replica.gatewayUrl}/readyz`, app, this.sidecars.get(index));
  }

  /** kill -9 of replica i's app process only (its daprd keeps running). */
  async killApp(index: number): Promise<void> {
    await this.killManaged(this.apps, index);
  }

  /** kill -9 of replica i's app and its daprd: the whole "pod" dies. */
  async killReplica(index: number): Promise<void> {
    await Promise.all([this.killManaged(this.apps, index), this.killManaged(this.sidecars, index)]);
  }

  /** kill -9 of replica i's daprd only (its app keeps running). */
  async killSidecar(index: number): Promise<void> {
    await this.killManaged(this.sidecars, index);
  }

  /** Graceful stop (SIGTERM) of replica i's app and daprd: the app first (as it hands its actors off), or daprd first, or both at once. */
  async stopReplica(index: number, order: "app-first" | "daprd-first" | "together" = "app-first"): Promise<void> {
    const app = this.apps.get(index);
    const sidecar = this.sidecars.get(index);
    this.apps.delete(index);
    this.sidecars.delete(index);
    const [first, second] = order === "daprd-first" ? [sidecar, app] : [app, sidecar];
    if (order === "together") await Promise.all([first, second].map((m) => m && terminate(m)));
    else for (const managed of [first, second]) if (managed) await terminate(managed);
  }

  appPid(index: number): number | undefined {
    return this.apps.get(index)?.child.pid;
  }

  daprdPid(index: number): number | undefined {
    return this.sidecars.get(index)?.child.pid;
  }

  private async killManaged(map: Map<number, Managed>, index: number): Promise<void> {
    const managed = map.get(index);
    map.delete(index);
    if (!managed || managed.child.exitCode !== null || managed.child.signalCode !== null) return;
    managed.child.kill("SIGKILL");
    await managed.exited;
  }

  /** Stops everything this cluster started, apps first, then sidecars, then infrastructure. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.building?.kill("SIGTERM");
    await Promise.all([...this.apps.values()].map(terminate));
    this.apps.clear();
    await Promise.all([...this.sidecars.values()].map(terminate));
    this.sidecars.clear();
    for (const managed of [...this.infra].reverse()) await terminate(managed);
    process.removeListener("exit", this.killAllNow);
  }

  private spawnLogged(name: string, command: string, args: string[], env: Record<string, string> = {}): Managed {
    if (this.stopped) throw new Error("the cluster was stopped while starting");
    const logFile = join(this.logDir, `${name}.log`);
    const fd = openSync(logFile, "a");
    const child = spawn(command, args, { stdio: ["ignore", fd, fd], env: { ...process.env, ...env }, cwd: repoDir });
    closeSync(fd);
    const exited = new Promise<number | null>((resolveExit) => {
      child.once("exit", (code) => resolveExit(code));
      child.once("error", (error) => {
        this.log(`${name}: ${error.message}`);
        resolveExit(null);
      });
    });
    return { name, child, exited };
  }

  private async waitHttp(label: string, url: string, process: Managed, sidecar?: Managed): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 60_000);
    let last = "";
    for (;;) {
      for (const p of [process, sidecar]) {
        if (p && (p.child.exitCode !== null || p.child.signalCode !== null)) {
          throw new Error(`${p.name} exited (${p.child.exitCode ?? p.child.signalCode}) before ${url} was ready; last lines of its log:\n${tail(join(this.logDir, `${p.name}.log`))}`);
        }
      }
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        last = `HTTP ${response.status}`;
        await response.body?.cancel();
        if (response.ok) return;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() > deadline) {
        throw new Error(`${label}: ${url} not ready after ${this.options.readyTimeoutMs ?? 60_000} ms (${last}); log:\n${tail(join(this.logDir, `${process.name}.log`))}`);
      }
      await sleep(100);
    }
  }
}

async function terminate(managed: Managed, graceMs = 10_000): Promise<void> {
  const { child } = managed;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await managed.exited;
  clearTimeout(timer);
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
