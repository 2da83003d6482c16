/** Copies text to the clipboard, and says whether it worked. */
import { useState } from 'preact/hooks';
import { html } from '../lib/html.js';

async function copyText(text, input) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  // Pages served over plain HTTP on a non-local address have no clipboard API.
  input?.select();
  if (!document.execCommand('copy')) throw new Error('copy refused');
}

export function CopyButton({ text, label = 'Copy', inputRef }) {
  const [state, setState] = useState('');
  const copy = async () => {
    try {
      await copyText(text, inputRef?.current);
      setState('Copied to the clipboard.');
    } catch {
      inputRef?.current?.select();
      setState('Could not copy: the text is selected, press Ctrl+C (⌘C) to copy it.');
    }
  };
  return html`<span class="copy">
    <button type="button" onClick=${copy}>${label}</button>
    <span role="status" aria-live="polite" class="copy-state">${state}</span>
  </span>`;
}
