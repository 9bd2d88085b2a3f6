// The page of the browser test, bundled by esbuild (flame.mjs): Pyroscope's
// flame graph component, as published on npm, rendering the profile that
// the test hands to window.renderProfile (flamebearer form).
import React from 'react';
import { createRoot } from 'react-dom/client';
import { FlamegraphRenderer } from '@pyroscope/flamegraph';
import '@pyroscope/flamegraph/dist/index.css';

window.renderProfile = (profile) => {
  createRoot(document.getElementById('root')).render(
    React.createElement(FlamegraphRenderer, { profile, onlyDisplay: 'both', showToolbar: true, colorMode: 'light' }));
};
