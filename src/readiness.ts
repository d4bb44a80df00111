/**
 * Readiness for load balancers, containers and sidecars. `/ready` is 200 only while Sluice
 * serves: after the migrations and the workspace file are applied, and until shutdown begins.
 * `/health` stays a liveness check (is the process alive and its database answering).
 * Before the app is ready nothing listens (a probe is refused); from the moment shutdown begins
 * the app answers 503 while requests in flight drain (src/main.ts).
 */
import { VERSION } from "./version";

export type Phase = "starting" | "ready" | "stopping";

export class Readiness {
  #phase: Phase = "starting";

  get phase(): Phase {
    return this.#phase;
  }

  get ready(): boolean {
    return this.#phase === "ready";
  }

  markReady(): void {
    if (this.#phase === "starting") this.#phase = "ready";
  }

  /** From here on /ready answers 503, for good. */
  beginShutdown(): void {
    this.#phase = "stopping";
  }
}

/** The answer of /ready in a phase. */
export function readyAnswer(phase: Phase): { status: number; body: { status: Phase; version: string } } {
  return { status: phase === "ready" ? 200 : 503, body: { status: phase, version: VERSION } };
}
