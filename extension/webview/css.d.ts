/** esbuild bundles imported stylesheets into the page's .css file. */
declare module '*.css';
