import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new SQL migration into migrations/ from src/model/schema.ts.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/model/schema.ts",
  out: "./migrations",
});
