/**
 * A real OpenSSH server for tests (KAFKA's useSSH), started by the test on a free port of
 * 127.0.0.1 with keys made for it: its host key, and a user key whose public half it authorizes.
 * Skips with a message where there is no sshd; `.ci/run` installs openssh-server and sets
 * SLUICE_REQUIRE_SSHD, so in CI a missing sshd fails instead.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "bun:test";

const SSHD = ["/usr/sbin/sshd", "/usr/bin/sshd"].find((p) => existsSync(p));
export const haveSshd = SSHD !== undefined && Bun.which("ssh-keygen") !== null;

export function requireSshd(file: string): void {
  if (!haveSshd) console.warn(`${file}: SSH tests skipped, no sshd (Debian: apt-get install openssh-server)`);
  test.if(!haveSshd && !!process.env.SLUICE_REQUIRE_SSHD)("sshd is installed (SLUICE_REQUIRE_SSHD is set)", () => {
    expect(SSHD).toBeDefined();
  });
}

export interface Sshd {
  port: number;
  user: string;
  /** The private key the server authorizes (OpenSSH format), and another one it does not. */
  privateKey: string;
  otherPrivateKey: string;
  /** The server's host public key, as known_hosts has it (`ssh-ed25519 AAAA…`). */
  hostKey: string;
  /** A public key that is not the server's (the unauthorized user key's), for a host-key mismatch. */
  notTheHostKey: string;
  /** Stops the server (a tunnel that cannot be opened); start() starts it again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its folder. */
  close(): Promise<void>;
}

function keygen(dir: string, name: string): { privateKey: string; publicKey: string } {
  const p = Bun.spawnSync(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", join(dir, name)], { stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`ssh-keygen: ${p.stderr.toString()}`);
  return { privateKey: readFileSync(join(dir, name), "utf8"), publicKey: readFileSync(join(dir, `${name}.pub`), "utf8").trim() };
}

async function freePort(): Promise<number> {
  const l = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = l.port;
  l.stop(true);
  return port;
}

async function accepting(port: number, deadline: number): Promise<void> {
  for (;;) {
    const ok = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (s) => (s.end(), true),
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`sshd did not listen on ${port}`);
    await Bun.sleep(20); // polling the port, with a deadline
  }
}

export async function startSshd(): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), "sluice-sshd-"));
  const host = keygen(dir, "host_key");
  const user = keygen(dir, "user_key");
  const other = keygen(dir, "other_key");
  writeFileSync(join(dir, "authorized_keys"), `${user.publicKey}\n`, { mode: 0o600 });
  const port = await freePort();
  // The login is this process's own user (Bun's os.userInfo() can say "unknown" here).
  const name = Bun.spawnSync(["id", "-un"]).stdout.toString().trim();
  writeFileSync(
    join(dir, "sshd_config"),
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PubkeyAuthentication yes",
      "AllowTcpForwarding yes",
      "PermitRootLogin prohibit-password",
      "StrictModes no",
      "UsePAM no",
      `PidFile ${join(dir, "sshd.pid")}`,
      "",
    ].join("\n"),
  );
  // sshd's privilege separation directory, which a machine that never ran sshd lacks.
  if (process.getuid?.() === 0 && !existsSync("/run/sshd")) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
  let proc: ReturnType<typeof Bun.spawn> | undefined;
  const start = async () => {
    proc = Bun.spawn([SSHD!, "-D", "-e", "-f", join(dir, "sshd_config")], { stdout: "ignore", stderr: process.env.X_SSHD_LOG ? "inherit" : "pipe" });
    await accepting(port, Date.now() + 10_000);
  };
  const stop = async () => {
    proc?.kill();
    await proc?.exited;
    proc = undefined;
  };
  await start();
  return {
    port,
    user: name,
    privateKey: user.privateKey,
    otherPrivateKey: other.privateKey,
    hostKey: host.publicKey.split(" ").slice(0, 2).join(" "),
    notTheHostKey: other.publicKey.split(" ").slice(0, 2).join(" "),
    start,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
