// Starts a benchmark server as a child process and reads the port it prints.
import { spawn, type ChildProcess } from "node:child_process";
import { onCpu, type CpuRole } from "./cpu-layout.ts";

export interface ChildServer {
  port: number;
  process: ChildProcess;
  stop(): void;
}

export function startChildServer(script: string, env: Record<string, string> = {}, cpu: CpuRole = "server"): Promise<ChildServer> {
  return new Promise((resolve, reject) => {
    const [command, args] = onCpu(cpu, process.execPath, [script]);
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let buffer = "";
    const timer = setTimeout(() => reject(new Error(`${script} did not print its port in 20 s`)), 20_000);
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const m = /PORT=(\d+)/.exec(buffer);
      if (m) {
        clearTimeout(timer);
        resolve({ port: Number(m[1]), process: child, stop: () => child.kill("SIGTERM") });
      }
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}
