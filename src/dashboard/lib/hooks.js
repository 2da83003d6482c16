/** Loading data and running actions, each with its error kept for the page to show. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { parseTypedJson } from './format.js';

/** Runs `load` whenever `deps` change (and on reload()); keeps data, error and loading. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ loading: true, data: undefined, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((prev) => ({ ...prev, loading: true, error: null }));
    load().then(
      (data) => current && setState({ loading: false, data, error: null }),
      (error) => current && setState({ loading: false, data: undefined, error }),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

/**
 * `[run, {busy, error, clear, setError, runJson}]`: run(fn) awaits fn, keeps its error, returns its
 * result or undefined; runJson(text, fn) runs fn with the JSON a person typed, or keeps why it is not JSON.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = useCallback(async (fn) => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (failure) {
      setError(failure);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  const clear = useCallback(() => setError(null), []);
  const runJson = useCallback(
    (text, fn) => {
      const typed = parseTypedJson(text);
      if (typed.ok) return run(() => fn(typed.value));
      setError(typed.error);
      return undefined;
    },
    [run],
  );
  return [run, { busy, error, clear, setError, runJson }];
}

/**
 * Runs `action(value)` when `value` changes after the first render, never at mount: a form
 * initialised from `value` keeps what the user typed until `value` really changes.
 */
export function useOnChange(value, action) {
  const seen = useRef(value);
  useEffect(() => {
    if (seen.current === value) return;
    seen.current = value;
    action(value);
  }, [value]);
}

/** `[set, toggle]`: a Set of chosen items (checkboxes), toggle(item) adds or removes one. */
export function useToggleSet(initial) {
  const [set, setSet] = useState(() => new Set(initial));
  const toggle = useCallback(
    (item) =>
      setSet((current) => {
        const next = new Set(current);
        if (next.has(item)) next.delete(item);
        else next.add(item);
        return next;
      }),
    [],
  );
  return [set, toggle];
}
