/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The API lives at the same origin as the app; in development Vite proxies its paths to a
// `lector serve` (HTTPS with a self-signed certificate, hence `secure: false`).
const target = process.env.UI_API_URL ?? "https://127.0.0.1:8443";
const apiPaths = [
  "/auth", "/users", "/organizations", "/projects", "/models", "/analyses", "/analyze",
  "/notifications", "/password", "/types", "/info", "/health", "/openapi.json", "/docs",
  "/workflows", "/webhook", "/webhook-test", "/metrics",
];

// The policy the server sends with the app (see crates/lector-api); `vite preview` sends it
// too, so that the browser tests catch a violation even against a binary without the app.
export const CSP =
  "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export default defineConfig({
  base: "/",
  plugins: [react()],
  build: {
    outDir: process.env.UI_OUT_DIR ?? "dist",
    emptyOutDir: true,
    // No inline assets: every byte comes from a file under /assets (CSP `'self'`).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    proxy: Object.fromEntries(apiPaths.map((p) => [p, { target, secure: false, changeOrigin: true }])),
  },
  preview: {
    proxy: Object.fromEntries(apiPaths.map((p) => [p, { target, secure: false, changeOrigin: true }])),
    headers: { "Content-Security-Policy": CSP },
  },
  // Vitest: the app's unit tests only (e2e/ runs under node --test with a browser).
  test: { include: ["src/**/*.test.ts"] },
});
