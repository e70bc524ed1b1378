// An S3 endpoint for tests: S3_ENDPOINT etc. from the environment (CI starts
// MinIO once, .ci/run), else a MinIO this test file starts from the cached
// build (scripts/minio.sh) and stops at teardown. Missing under CI=true is a
// loud failure, never a skip; outside CI the caller skips with the reason.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { S3Settings } from "../../media/s3-file-store.ts";

const script = new URL("../../scripts/minio.sh", import.meta.url).pathname;

export interface TestS3 {
  settings: S3Settings;
  /** The environment a Troupe needs to use this bucket. */
  env: Record<string, string>;
  stop(): void;
}

function fromEnv(env: Record<string, string | undefined>): S3Settings | undefined {
  const endpoint = env["S3_ENDPOINT"];
  if (!endpoint) return undefined;
  return {
    endpoint,
    bucket: env["S3_BUCKET"] ?? "troupe-files",
    region: env["S3_REGION"] ?? "us-east-1",
    accessKeyId: env["S3_ACCESS_KEY_ID"] ?? "",
    secretAccessKey: env["S3_SECRET_ACCESS_KEY"] ?? "",
  };
}

function envOf(s: S3Settings): Record<string, string> {
  return { S3_ENDPOINT: s.endpoint, S3_BUCKET: s.bucket, S3_REGION: s.region, S3_ACCESS_KEY_ID: s.accessKeyId, S3_SECRET_ACCESS_KEY: s.secretAccessKey };
}

function minioBuilt(): boolean {
  try {
    // `build` returns at once when cached; without the cache it would compile for minutes, so ask first.
    const cache = process.env["TROUPE_CACHE_DIR"] ?? join(process.env["HOME"] ?? "/root", ".cache", "troupe");
    execFileSync("bash", ["-c", `ls "${cache}"/minio/*/minio >/dev/null 2>&1`]);
    return true;
  } catch {
    return false;
  }
}

/** An S3 endpoint, or a string saying why there is none (outside CI only). */
export function testS3(bucket: string): TestS3 | string {
  const given = fromEnv(process.env);
  if (given) {
    const settings = { ...given, bucket };
    return { settings, env: envOf(settings), stop: () => undefined };
  }
  if (!minioBuilt()) {
    const why = "no S3_ENDPOINT and no cached MinIO build: run `bash scripts/minio.sh build` (or start one and export the S3_* it prints)";
    if (process.env["CI"] === "true") throw new Error(why);
    return why;
  }
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-minio-"));
  const out = execFileSync("bash", [script, "start"], { env: { ...process.env, MINIO_DATA_DIR: dataDir, S3_BUCKET: bucket }, encoding: "utf8" });
  const vars: Record<string, string> = {};
  for (const line of out.split("\n")) {
    const m = /^(S3_[A-Z_]+)=(.*)$/.exec(line);
    if (m) vars[m[1]!] = m[2]!;
  }
  const settings = fromEnv(vars);
  if (!settings) throw new Error(`scripts/minio.sh start printed no S3_ENDPOINT:\n${out}`);
  return {
    settings,
    env: envOf(settings),
    stop: () => {
      execFileSync("bash", [script, "stop"], { env: { ...process.env, MINIO_DATA_DIR: dataDir }, stdio: "ignore" });
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
