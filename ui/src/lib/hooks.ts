import { useCallback, useEffect, useRef, useState } from "react";
import { useSearchParams } from "react-router";
import { patchQuery } from "./links";

export type Loaded<T> = {
  data: T | undefined;
  error: Error | null;
  loading: boolean;
  reload: () => void;
  setData: (t: T) => void;
};

/** Runs `load` when `deps` change; answers its data, its error and a way to run it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let live = true;
    setLoading(true);
    loadRef
      .current()
      .then((d) => {
        if (live) {
          setData(d);
          setError(null);
        }
      })
      .catch((e: Error) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload, setData };
}

/**
 * Polls `load` every `ms` while `active` says to go on; stops on an error (the caller shows it
 * and may retry) and when the component goes away.
 */
export function usePoll<T>(
  load: () => Promise<T>,
  active: (t: T | undefined) => boolean,
  deps: unknown[],
  ms = 1000,
): Loaded<T> & { polling: boolean; stop: () => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [stopped, setStopped] = useState(false);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const activeRef = useRef(active);
  activeRef.current = active;
  const [polling, setPolling] = useState(false);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const step = () => {
      loadRef
        .current()
        .then((d) => {
          if (!live) return;
          setData(d);
          setError(null);
          setLoading(false);
          if (activeRef.current(d) && !stopped) {
            setPolling(true);
            timer = setTimeout(step, ms);
          } else setPolling(false);
        })
        .catch((e: Error) => {
          if (!live) return;
          setError(e);
          setLoading(false);
          setPolling(false);
        });
    };
    setLoading(true);
    step();
    return () => {
      live = false;
      if (timer) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick, stopped, ms]);
  const reload = useCallback(() => {
    setStopped(false);
    setTick((t) => t + 1);
  }, []);
  const stop = useCallback(() => setStopped(true), []);
  return { data, error, loading, reload, setData, polling: polling && !stopped, stop };
}

/**
 * The offset of a paged list, back to 0 when `key` changes (another workspace, another
 * configuration): the list then starts again at its first page.
 */
export function useOffset(key: string): [number, (offset: number) => void] {
  const [at, setAt] = useState({ key, offset: 0 });
  const offset = at.key === key ? at.offset : 0;
  const set = useCallback((o: number) => setAt({ key, offset: o }), [key]);
  return [offset, set];
}

/** Runs an action, keeping whether it is busy and its error. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const run = useCallback(async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(e as Error);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}

/**
 * The page's query string, and a change to it (see patchQuery) that goes into the history:
 * values kept there (a page's offset, a filter, the models compared) survive a reload, Back
 * undoes a change, and a link carries them. `replace` changes them without a history entry.
 * The setter is the same on every render.
 */
export function useQuery(): [URLSearchParams, (patch: Record<string, string | number | null>, replace?: boolean) => void] {
  const [query, setQuery] = useSearchParams();
  const set = useRef(setQuery);
  set.current = setQuery;
  const change = useCallback(
    (patch: Record<string, string | number | null>, replace = false) => set.current((q) => patchQuery(q, patch), { replace }),
    [],
  );
  return [query, change];
}
