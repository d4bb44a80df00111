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

/**
 * Loads what a page shows from the API when `deps` change, with its error as text. An answer
 * to an older call (the user moved on, or a reload overtook it) is dropped, so a slow answer
 * never replaces a newer one.
 */
export function useResource<T>(load: () => Promise<T>, deps: unknown[] = []): Resource<T> {
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
  useEffect(() => {
    reload();
  }, deps);
  return { data, error, setData, setError, reload };
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
 * With `catchUp`, a tab shown again refreshes at once rather than at the next tick.
 */
export function usePolling(fn: () => void, ms: number, deps: unknown[], catchUp = false) {
  useEffect(() => {
    fn();
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
