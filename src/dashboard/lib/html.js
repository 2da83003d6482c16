/** JSX-like templates without a build step: htm bound to preact's h. */
import htm from 'htm';
import { h } from 'preact';

export const html = htm.bind(h);
