/**
 * Shows a secret once (a new or rotated API key, a webhook secret), in a modal dialog with a
 * copy button. The native <dialog> keeps focus inside and closes on Escape.
 */
import { useEffect, useRef } from 'preact/hooks';
import { html } from '../lib/html.js';
import { CopyButton } from './copy.js';

export function SecretDialog({ title, secret, explanation, label, onClose }) {
  const dialog = useRef(null);
  const input = useRef(null);
  useEffect(() => {
    const element = dialog.current;
    if (secret && element && !element.open) {
      element.showModal();
      input.current?.focus();
      input.current?.select();
    }
  }, [secret]);
  if (!secret) return null;
  return html`<dialog ref=${dialog} class="secret-dialog" aria-labelledby="secret-title"
      aria-describedby="secret-explanation" onClose=${onClose}>
    <h2 id="secret-title">${title}</h2>
    <p id="secret-explanation">${explanation}</p>
    <label for="secret-value">${label}</label>
    <div class="secret-row">
      <input id="secret-value" ref=${input} readonly value=${secret} class="mono" spellcheck="false" />
      <${CopyButton} text=${secret} inputRef=${input} label="Copy" />
    </div>
    <form method="dialog"><button type="submit" class="primary">I have saved it</button></form>
  </dialog>`;
}
