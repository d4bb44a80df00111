/**
 * Kafka through an SSH tunnel (KAFKA's useSSH), as rudder-server connects (rudder-go-kit's
 * kafkaclient): every broker connection is opened from the SSH server (a direct-tcpip channel),
 * authenticated with the destination's private key. rudder-server fetches that key from
 * RudderStack's control plane, which keeps one key pair per destination; Sluice has no such
 * service, so the key is the destination's own secret `sshPrivateKey`.
 *
 * Where rudder-server accepts any host key, Sluice checks it when the destination names one
 * (`sshHostKey`, the server's public key as in known_hosts: `ssh-ed25519 AAAA…`).
 *
 * Why ssh2: the maintained pure-JavaScript SSH client (MIT); its optional native parts are not
 * needed, and it runs inside `bun build --compile`.
 */
import { isIP } from "node:net";
import { Duplex } from "node:stream";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { Client, type ParsedKey, utils } from "ssh2";

export interface SshSettings {
  /** The address to connect to (the outbound policy's pinned one) and the name it was given. */
  address: string;
  host: string;
  port: number;
  user: string;
  privateKey: string;
  hostKey?: string;
}

/** The key a text holds (OpenSSH or PEM), or why it holds none. */
function parsedKey(text: string): ParsedKey | string {
  const parsed = utils.parseKey(text.trim());
  if (parsed instanceof Error) return parsed.message;
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  return key ?? "no key found";
}

/** Why a private key cannot be used, or undefined when it can. */
export function sshKeyProblem(privateKey: string): string | undefined {
  const key = parsedKey(privateKey);
  if (typeof key === "string") return key;
  return key.isPrivateKey() ? undefined : "is a public key, not a private one";
}

/** Why a host key is no SSH public key, or undefined when it is one. */
export function sshHostKeyProblem(hostKey: string): string | undefined {
  const key = parsedKey(hostKey);
  return typeof key === "string" ? key : undefined;
}

/**
 * What kafkajs is handed as a socket: a stream that carries the channel once it is open. kafkajs
 * writes only after its connect callback, so nothing waits here but the stream's own buffer.
 */
class TunnelSocket extends Duplex {
  private channel: Duplex | undefined;
  private queued: Array<{ chunk: Buffer; done: (err?: Error | null) => void }> = [];

  attach(channel: Duplex) {
    this.channel = channel;
    channel.on("data", (d: Buffer) => {
      if (!this.push(d)) channel.pause();
    });
    channel.on("end", () => this.push(null));
    channel.on("close", () => this.destroy());
    channel.on("error", (e: Error) => this.destroy(e));
    for (const q of this.queued.splice(0)) channel.write(q.chunk, q.done);
  }
  override _read() {
    this.channel?.resume();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void) {
    if (this.channel) this.channel.write(chunk, done);
    else this.queued.push({ chunk, done });
  }
  override _final(done: (err?: Error | null) => void) {
    this.channel?.end();
    done();
  }
  override _destroy(err: Error | null, done: (err?: Error | null) => void) {
    this.channel?.destroy();
    done(err);
  }
  // What kafkajs and tls call on a net.Socket; a channel has no keep-alive or timer of its own.
  setKeepAlive() {
    return this;
  }
  setNoDelay() {
    return this;
  }
  setTimeout() {
    return this;
  }
  ref() {
    return this;
  }
  unref() {
    return this;
  }
}

/**
 * One SSH connection per producer, opened at its first broker connection and shared by the
 * others; closed with the producer. A connection that fails or drops is opened again at the next
 * broker connection.
 */
export class SshTunnel {
  private client: Promise<Client> | undefined;

  constructor(
    private readonly ssh: SshSettings,
    private readonly timeoutMs: number,
  ) {}

  private connection(): Promise<Client> {
    this.client ??= new Promise<Client>((resolve, reject) => {
      const c = new Client();
      const expected = this.ssh.hostKey ? parsedKey(this.ssh.hostKey) : undefined;
      c.on("ready", () => resolve(c));
      c.on("error", (e) => {
        this.client = undefined;
        reject(new Error(`SSH to ${this.ssh.host}:${this.ssh.port}: ${e.message}`));
      });
      c.on("close", () => {
        this.client = undefined;
      });
      c.connect({
        host: this.ssh.address,
        port: this.ssh.port,
        username: this.ssh.user,
        privateKey: this.ssh.privateKey,
        readyTimeout: Math.min(this.timeoutMs, 10_000),
        keepaliveInterval: 30_000,
        hostVerifier: expected && typeof expected !== "string" ? (key: Buffer) => expected.getPublicSSH().equals(key) : undefined,
      });
    });
    return this.client;
  }

  /** kafkajs' socketFactory: a broker connection opened from the SSH server, with TLS over it when asked. */
  socketFactory() {
    return ({ host, port, ssl, onConnect }: { host: string; port: number; ssl: ConnectionOptions | boolean | undefined; onConnect: () => void }) => {
      const tunnel = new TunnelSocket();
      // `host`: the name the broker's certificate is checked against, as a direct connection's.
      const tls = ssl ? tlsConnect({ ...(typeof ssl === "object" ? ssl : {}), socket: tunnel, host, servername: isIP(host) ? undefined : host }, onConnect) : undefined;
      this.connection()
        .then(
          (c) =>
            new Promise<Duplex>((resolve, reject) =>
              c.forwardOut("127.0.0.1", 0, host, port, (err, channel) => (err ? reject(new Error(`SSH to ${this.ssh.host}: cannot reach ${host}:${port} (${err.message})`)) : resolve(channel))),
            ),
        )
        .then(
          (channel) => {
            tunnel.attach(channel);
            if (!tls) onConnect();
          },
          (err: Error) => (tls ?? tunnel).destroy(err),
        );
      return (tls ?? tunnel) as unknown as import("node:net").Socket;
    };
  }

  close() {
    const c = this.client;
    this.client = undefined;
    c?.then((x) => x.end(), () => {});
  }
}
