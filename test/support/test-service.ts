// How the tests start a service of their own (redis-server): it dies with
// the test process, however that dies (a test killed by tap's timeout left
// its redis-server running). util-linux's `setpriv --pdeathsig KILL` asks
// the kernel to send SIGKILL when the parent exits.
import { spawn, type ChildProcess } from "node:child_process";

export function spawnTestService(command: string, args: string[]): ChildProcess {
  return spawn("setpriv", ["--pdeathsig", "KILL", "--", command, ...args], { stdio: "ignore" });
}
