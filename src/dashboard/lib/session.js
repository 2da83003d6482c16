/** The signed-in account and the page-wide notice, shared by every page. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export const SessionContext = createContext({
  account: null,
  setAccount: () => {},
  notify: () => {},
});

export function useSession() {
  return useContext(SessionContext);
}
