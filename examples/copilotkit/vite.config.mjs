import { defineConfig } from "vite";

// No React plugin: Vite compiles JSX with React's automatic runtime, which is all this page
// needs. `npm run dev` serves the page with hot reload and sends the runtime's requests to
// `npm start` (PORT 3000).
export default defineConfig({
  server: { proxy: { "/api/copilotkit": "http://127.0.0.1:3000" } },
  build: {
    chunkSizeWarningLimit: 8000,
    rolldownOptions: {
      // CopilotKit's dependencies mark modules "use client" (for React Server Components);
      // a client-only bundle has nothing to keep of it.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
});
