/**
 * A live view of a collection's change stream (`GET .../_stream`, Server-Sent Events). Read with
 * fetch rather than EventSource, so a refusal (403 on the Free plan, 429 over the stream limit)
 * shows Folio's own error; the SSE text is parsed by eventsource-parser. After a dropped
 * connection the view reconnects with Last-Event-ID, so no event is missed.
 */
import { createParser } from 'eventsource-parser';
import { useEffect, useRef, useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { ApiError, dataPath, readResponse, send } from '../lib/api.js';
import { formatTime, preview, userFields } from '../lib/format.js';
import { useToggleSet } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

const TYPES = ['created', 'updated', 'deleted'];
/** Events kept on screen; older ones scroll away. */
const KEEP = 200;
const RECONNECT_MS = 2000;

export function LivePage(at) {
  const [types, toggle] = useToggleSet(TYPES);
  const stream = useChangeStream(at, types);
  const { running, state, received } = stream;

  return html`<${Page} title=${`Live changes · ${at.collection} · ${at.project} (${at.env})`}>
    <${CollectionNav} ...${at} current="live" />
    <div class="card">
      <fieldset disabled=${running}>
        <legend>Events to show</legend>
        ${TYPES.map(
          (type) =>
            html`<label class="choice"><input type="checkbox" checked=${types.has(type)} onChange=${() => toggle(type)} /> document.${type}</label>`,
        )}
      </fieldset>
      <div class="buttons">
        ${
          running
            ? html`<button type="button" onClick=${stream.stop}>Stop</button>`
            : html`<button type="button" class="primary" disabled=${types.size === 0} onClick=${stream.start}>Start</button>`
        }
        <button type="button" class="link" onClick=${stream.clear}>Clear</button>
      </div>
      <p role="status" class="stream-state">${state} ${received > 0 ? `${received} received.` : ''}</p>
      <${ErrorBox} error=${stream.error} />
    </div>
    <table class="list">
      <caption>Changes, newest first</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Document</th>
        <th scope="col" class="num">$version</th><th scope="col">Fields</th></tr></thead>
      <tbody>
        ${stream.events.map((e) => html`<${ChangeRow} change=${e} at=${at} />`)}
      </tbody>
    </table>
  <//>`;
}

function ChangeRow({ change, at }) {
  const doc = change.data?.document;
  const timestamp = change.data?.timestamp;
  return html`<tr>
    <td>${timestamp ? html`<time datetime=${timestamp}>${formatTime(timestamp)}</time>` : ''}</td>
    <th scope="row">${change.type}</th>
    <td>${doc?._id ? html`<a class="mono" href=${href('p', at.project, at.env, 'c', at.collection, 'd', doc._id)}>${doc._id}</a>` : ''}</td>
    <td class="num">${doc?.$version ?? ''}</td>
    <td class="mono preview">${doc ? preview(userFields(doc)) : ''}</td>
  </tr>`;
}

/**
 * The collection's change stream of the chosen `types`, read from start() until stop(): its
 * state line, the events kept (newest first), how many arrived, and a refusal if any.
 */
function useChangeStream(at, types) {
  const [running, setRunning] = useState(false);
  const [state, setState] = useState('Stopped.');
  const [events, setEvents] = useState([]);
  const [received, setReceived] = useState(0);
  const [error, setError] = useState(null);
  const connection = useRef(null);

  const stop = () => {
    connection.current?.abort();
    connection.current = null;
    setRunning(false);
    setState('Stopped.');
  };
  useEffect(() => stop, []);

  const onMessage = (message, data) => {
    // Folio's own events: checkpoints only move the resume position; closing and reset
    // events say why the connection ends (the loop reconnects or shows the refusal).
    if (message.event?.startsWith('stream.')) {
      if (message.event !== 'stream.checkpoint') setState(`${message.event}: ${data?.message ?? ''}`);
      return;
    }
    setReceived((n) => n + 1);
    setEvents((list) =>
      [{ id: message.id ?? String(Date.now()), type: message.event ?? 'message', data }, ...list].slice(
        0,
        KEEP,
      ),
    );
  };

  const start = () => {
    const controller = new AbortController();
    connection.current = controller;
    setRunning(true);
    setError(null);
    const url = streamUrl(at, types);
    let lastId = '';
    const connect = async () => {
      setState(lastId ? 'Reconnecting…' : 'Connecting…');
      try {
        const headers = { Accept: 'text/event-stream' };
        if (lastId) headers['Last-Event-ID'] = lastId;
        const response = await send(url, { headers, credentials: 'same-origin', signal: controller.signal });
        if (!response.ok) await readResponse(response);
        setState('Connected: waiting for changes.');
        await readEvents(response, (message) => {
          if (message.id) lastId = message.id;
          onMessage(message, messageData(message));
        });
      } catch (failure) {
        if (controller.signal.aborted) return;
        if (failure instanceof ApiError) {
          setError(failure);
          setRunning(false);
          setState('Stopped.');
          connection.current = null;
          return;
        }
      }
      if (controller.signal.aborted) return;
      setState('Connection lost: reconnecting…');
      setTimeout(() => !controller.signal.aborted && connect(), RECONNECT_MS);
    };
    connect();
  };

  return { running, state, events, received, error, start, stop, clear: () => setEvents([]) };
}

/** The stream's URL: every event type unless some were left out. */
function streamUrl(at, types) {
  const query = new URLSearchParams();
  if (types.size < TYPES.length) query.set('events', TYPES.filter((t) => types.has(t)).join(','));
  return `${dataPath(at.env, at.project, at.collection, '_stream')}${query.size ? `?${query}` : ''}`;
}

/** Reads an SSE response to its end, handing each message to `onEvent`. */
async function readEvents(response, onEvent) {
  const parser = createParser({ onEvent });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
}

/** A message's data as JSON, or its text when it is not JSON. */
function messageData(message) {
  try {
    return JSON.parse(message.data);
  } catch {
    return message.data;
  }
}
