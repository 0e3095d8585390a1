import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new SQL migration into migrations/ from src/storage/schema.ts.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/storage/schema.ts",
  out: "./migrations",
});
