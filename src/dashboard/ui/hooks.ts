import { useEffect, useRef, useState } from "preact/hooks";
import { api, errorMessage } from "./api";
import type { DestinationList, SourceList } from "./types";

export interface Resource<T> {
  /** Undefined until the first answer. */
  data: T | undefined;
  error: string;
  setData: (data: T | undefined) => void;
  setError: (error: string) => void;
  /** Asks again, keeping what is shown until the answer; never rejects. */
  reload: () => Promise<void>;
}

/** Holds what one loader answered, with its error as text; `reload` asks again. */
function useLoaded<T>(load: () => Promise<T>): Resource<T> {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState("");
  const seq = useRef(0);
  const reload = async () => {
    const mine = ++seq.current;
    try {
      const value = await load();
      if (mine !== seq.current) return;
      setData(value);
      setError("");
    } catch (e) {
      if (mine === seq.current) setError(errorMessage(e));
    }
  };
  return { data, error, setData, setError, reload };
}

/**
 * Loads what a page shows from the API when `deps` change, with its error as text. An answer
 * to an older call (the user moved on, or a reload overtook it) is dropped, so a slow answer
 * never replaces a newer one.
 */
export function useResource<T>(load: () => Promise<T>, deps: unknown[] = []): Resource<T> {
  const resource = useLoaded(load);
  useEffect(() => {
    resource.reload();
  }, deps);
  return resource;
}

/**
 * A list the API answers at `path` as `{ <last segment of path>: [...] }` (GET /v2/sources →
 * `{ sources }`), loaded like `useResource`.
 */
export function useList<T>(path: string, deps: unknown[] = []): Resource<T[]> {
  const key = path.slice(path.lastIndexOf("/") + 1);
  return useResource(() => api<Record<string, T[]>>("GET", path).then((r) => r[key]!), deps);
}

/**
 * Like `useResource`, and asks again every `ms` while the tab is visible (see `usePolling`);
 * `ms` 0 loads once per change of `deps`. What is shown stays until the next answer.
 */
export function usePolled<T>(load: () => Promise<T>, ms: number, deps: unknown[], catchUp = false): Resource<T> {
  const resource = useLoaded(load);
  usePolling(resource.reload, ms, deps, catchUp);
  return resource;
}

/**
 * One change at a time from a form or a button: `busy` while it runs (to disable the control),
 * its failure as text. `run` resolves to whether it worked, so a caller can go on only then.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const run = async (change: () => Promise<unknown>): Promise<boolean> => {
    setError("");
    setBusy(true);
    try {
      await change();
      return true;
    } catch (e) {
      setError(errorMessage(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}

/**
 * Calls `fn` now and every `ms` while the tab is visible: a hidden tab costs the server nothing.
 * With `catchUp`, a tab shown again refreshes at once rather than at the next tick. `ms` 0: only
 * now, no timer.
 */
function usePolling(fn: () => void, ms: number, deps: unknown[], catchUp = false) {
  useEffect(() => {
    fn();
    if (ms <= 0) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") fn();
    }, ms);
    const onVisible = () => document.visibilityState === "visible" && fn();
    if (catchUp) document.addEventListener("visibilitychange", onVisible);
    return () => {
      clearInterval(timer);
      if (catchUp) document.removeEventListener("visibilitychange", onVisible);
    };
  }, deps);
}

/** Every source and destination, for the pages that offer them to pick from or name them. */
export function useSourcesAndDestinations() {
  const { data, error } = useResource(() => Promise.all([api<SourceList>("GET", "/v2/sources"), api<DestinationList>("GET", "/v2/destinations")]));
  return { sources: data?.[0].sources, destinations: data?.[1].destinations, error };
}
